#!/usr/bin/env bash
# WEFT_ENCRYPTION=tls between two hosts (network namespaces, hosts_lib.sh): tcpdump on host 1's
# link while the ranks all-gather a known ASCII pattern (canary_all_gather). With TLS neither the
# pattern nor rank 1's host name (which its bootstrap record carries to the root on host 0) may
# appear in the captured bytes; without it, both must (so the test can fail).
# Exit 77 = skipped (no root, namespaces or tcpdump).
#   encryption.sh BUILD_DIR
set -u
build=${1:?usage: encryption.sh BUILD_DIR}
. "$(dirname "$0")/hosts_lib.sh"
command -v tcpdump >/dev/null || { echo "skipped: tcpdump is not installed (tools/scripts/install-deps.sh)"; exit 77; }
hosts_create 2
out=$(mktemp -d)
trap 'hosts_cleanup; rm -rf "$out"' EXIT

# Runs both ranks under a capture on host 1's eth0; prints how many packets carry the pattern,
# then how many carry rank 1's host name.
captured_canaries() {  # mode
  local capture=$out/$1.pcap
  ip netns exec "$(hosts_ns 1)" tcpdump -i eth0 -U -s 0 -B 65536 -w "$capture" tcp >"$out/tcpdump.log" 2>&1 &
  local dumper=$!
  # tcpdump says "listening on" once its capture is open.
  for ((i = 0; i < 50; i++)); do grep -q "listening on" "$out/tcpdump.log" 2>/dev/null && break; sleep 0.1; done
  HOSTS_ENV="WEFT_NET=tcp WEFT_TIMEOUT=60 WEFT_ENCRYPTION=$1"
  hosts_run_ranks 1 "$out" "$build/tests/canary_all_gather"
  local failed=0
  hosts_wait_ranks || failed=1
  sleep 0.3
  kill -INT $dumper
  wait $dumper
  if [ $failed -ne 0 ]; then
    echo "FAILED: the ranks failed with WEFT_ENCRYPTION=$1" >&2
    cat "$out/rank0.log" "$out/rank1.log" >&2
    echo "-1 -1"
    return
  fi
  # A packet the kernel dropped from the capture could have been the one in clear.
  if ! grep -q "^0 packets dropped by kernel" "$out/tcpdump.log"; then
    echo "FAILED: tcpdump missed packets with WEFT_ENCRYPTION=$1: $(grep dropped "$out/tcpdump.log")" >&2
    echo "-1 -1"
    return
  fi
  local bytes
  bytes=$(stat -c %s "$capture")
  echo "WEFT_ENCRYPTION=$1: $bytes bytes captured; tcpdump: $(grep -E "captured|dropped" "$out/tcpdump.log" | tr "\n" " ")" >&2
  echo "$(grep -a -c -F "WEFT-CANARY-PLAINTEXT" "$capture") $(grep -a -c -F "host1" "$capture")"
}

read -r plain plainHost <<<"$(captured_canaries none)"
read -r tls tlsHost <<<"$(captured_canaries tls)"
echo "captured lines with the pattern: without encryption $plain, with TLS $tls"
echo "captured lines with rank 1's host name (bootstrap): without encryption $plainHost, with TLS $tlsHost"
[ "$plain" -gt 0 ] && [ "$plainHost" -gt 0 ] ||
  { echo "FAILED: the pattern or the host name was not seen even in plain traffic: the capture proves nothing"; exit 1; }
[ "$tls" -eq 0 ] || { echo "FAILED: the pattern crossed the link in clear with WEFT_ENCRYPTION=tls"; exit 1; }
[ "$tlsHost" -eq 0 ] || { echo "FAILED: the bootstrap record crossed the link in clear with WEFT_ENCRYPTION=tls"; exit 1; }
echo "OK: data and bootstrap visible without encryption, never with TLS"
