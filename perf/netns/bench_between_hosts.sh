#!/usr/bin/env bash
# Between two hosts (network namespaces, tests/netns/hosts_lib.sh), one rank each: weft's
# all-reduce over TCP, over TCP with TLS (WEFT_ENCRYPTION=tls) and over UCX beside the ceilings measured in the same run on the same
# link: ucx_perftest's tag-matching latency (ucx-utils) and iperf3's bidirectional goodput.
# Needs root; prints markdown rows for docs/performance.md.
#   bench_between_hosts.sh BUILD_DIR [RATE]     RATE: a tc tbf rate (1gbit, 10gbit) or none
set -u
build=${1:?usage: bench_between_hosts.sh BUILD_DIR [RATE]}
rate=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../tests/netns/hosts_lib.sh"
for tool in iperf3 ucx_perftest; do
  command -v $tool >/dev/null || { echo "skipped: $tool is not installed (tools/scripts/install-deps.sh)"; exit 77; }
done
# Each host's rank on its own CPU, as real hosts have cores of their own (unpinned, the
# scheduler packs the two ranks on one CPU after their large transfers: docs/developer-notes.md).
HOSTS_PIN=${HOSTS_PIN:-1}
hosts_create 2 "$rate"
ns0=$(hosts_ns 0) ns1=$(hosts_ns 1) addr1=$(hosts_addr 1)
echo "# link: ${rate:-unshaped veth}"
# The VM's placement phase (perf/vm_phase.py): above 100 ns, UCX's large messages run at about
# half their speed. Compare only runs with the round trip low before and after.
round_trip() { /usr/bin/python3 "$here/../vm_phase.py" "$build"; }
echo "# cache-line round trip between CPUs 0 and 1, before: $(round_trip) ns"

goodput=$(hosts_goodput 0 1) || { echo "iperf3 failed"; exit 1; }
echo "iperf3 --bidir goodput (slower direction): $goodput GB/s"

# ucx_perftest tag-matching ping-pong, 8 bytes, over UCX's tcp transport.
ip netns exec "$ns1" env UCX_TLS=tcp ucx_perftest >/dev/null 2>&1 &
server=$!
sleep 0.5
ucx_lat=$(ip netns exec "$ns0" env UCX_TLS=tcp ucx_perftest "$addr1" -t tag_lat -s 8 -n 20000 2>&1 |
  awk '/^ *Final:/ {print $5}')
wait $server
echo "ucx_perftest tag_lat 8 B (one-way, typical): $ucx_lat us"

out=$(mktemp -d)
run_weft() {  # net args...   (net: tcp, ucx, or tls for TCP with WEFT_ENCRYPTION=tls)
  local net=$1
  shift
  HOSTS_ENV="WEFT_NET=${net/tls/tcp} WEFT_TIMEOUT=120"
  [ "$net" = tls ] && HOSTS_ENV="$HOSTS_ENV WEFT_ENCRYPTION=tls"
  hosts_run_ranks 1 "$out" "$build/perf/all_reduce_perf" "$@"
  hosts_wait_ranks || { echo "weft over $net failed:"; cat "$out/rank0.log" "$out/rank1.log"; exit 1; }
  grep -q "Out of bounds values : 0 OK" "$out/rank0.log" || { echo "wrong data over $net"; exit 1; }
}
for net in ${BENCH_NETS:-tcp tls ucx}; do
  run_weft $net -b 8 -e 8 -c 1 -w 200 -n 5000
  lat=$(awk '$1 == 8 {print $6}' "$out/rank0.log")
  echo "weft $net all_reduce 8 B: $lat us"
  run_weft $net -b 1M -e 64M -f 4 -c 1 -w 2 -n 10
  echo "weft $net all_reduce busbw (GB/s) by size:"
  awk '$1 ~ /^[0-9]+$/ {printf "  %10d %s\n", $1, $8}' "$out/rank0.log"
done
rm -rf "$out"
echo "# cache-line round trip between CPUs 0 and 1, after: $(round_trip) ns"
