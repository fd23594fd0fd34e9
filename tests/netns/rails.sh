#!/usr/bin/env bash
# Rails: 2 hosts x 2 ranks, every host with 2 NICs on separate rail networks (HOSTS_NICS=2 in
# tests/netns/hosts_lib.sh), every link shaped to the same rate. The ring all-reduce over NET
# (tcp, the default, or ucx) runs with NCCL_SOCKET_IFNAME naming both NICs, then with eth0
# alone (for ucx: UCX_NET_DEVICES=eth0), on the same links.
# With both: the data is right, each pair between hosts says which rail it took and the two
# pairs took different ones, both NICs of each host carried at least a quarter of the bytes
# (read from the NICs' counters), and the all-reduce takes at most 1/1.3 of the one-NIC time
# (two NICs of the same rate; 2x in theory). With eth0 alone eth1 carries nothing.
# Exit 77 = skipped (reason printed) where namespaces cannot be made.
#   rails.sh BUILD_DIR [RATE] [NET]
set -u
build=${1:?usage: rails.sh BUILD_DIR [RATE] [NET]}
rate=${2:-200mbit}
net=${3:-tcp}
name=$(echo "$net" | tr a-z A-Z)  # as the INFO lines name the transport
export HOSTS_NICS=2
. "$(dirname "$0")/hosts_lib.sh"
hosts_create 2 "$rate"

# Bytes host 0 sent on NIC K so far.
tx_bytes() { ip netns exec "$(hosts_ns 0)" cat "/sys/class/net/eth$1/statistics/tx_bytes"; }

failures=0
fail() {
  echo "FAILED: $*"
  failures=$((failures + 1))
}

# Runs the all-reduce; sets TIME_US (4 MiB, out of place, rank 0) and ETH0/ETH1 (host 0's bytes).
#   run IFNAME [ENV...]
run() {
  local ifname=$1 out before0 before1
  shift
  out=$(mktemp -d)
  before0=$(tx_bytes 0) before1=$(tx_bytes 1)
  HOSTS_ENV="WEFT_TIMEOUT=60 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET WEFT_NET=$net WEFT_ALGO=allreduce:ring"
  [ -n "$ifname" ] && HOSTS_ENV="$HOSTS_ENV NCCL_SOCKET_IFNAME=$ifname"
  HOSTS_ENV="$HOSTS_ENV $*"
  hosts_run_ranks 2 "$out" "$build/perf/all_reduce_perf" -b 4M -e 4M -c 1 -w 1 -n 3
  hosts_wait_ranks || fail "$? rank(s) failed (${ifname:-both NICs})"
  ETH0=$(($(tx_bytes 0) - before0)) ETH1=$(($(tx_bytes 1) - before1))
  grep -v INFO "$out/rank0.log" | grep -E "^ +[0-9]|Out of"
  grep -q "Out of bounds values : 0 OK" "$out/rank0.log" || fail "wrong data (${ifname:-both NICs})"
  TIME_US=$(grep -v INFO "$out/rank0.log" | awk '$1 == 4194304 {print $6}')
  grep -ho "via $name (host [a-z0-9]*, rail [0-9] at [0-9.:]*)" "$out"/rank*.log | sort -u
  RAILS=$(grep -ho "via $name (host [a-z0-9]*, rail [0-9]" "$out"/rank*.log | grep -o "rail [0-9]" | sort -u | wc -l)
  [ "$failures" -gt 0 ] && for f in "$out"/rank*.log; do echo "--- $f"; tail -15 "$f"; done
  rm -rf "$out"
}

run ""
rails_time=$TIME_US rails_eth0=$ETH0 rails_eth1=$ETH1 rails_used=$RAILS
echo "# both NICs: $rails_time us; host 0 sent $rails_eth0 bytes on eth0, $rails_eth1 on eth1"
# One NIC: NCCL_SOCKET_IFNAME for TCP; UCX picks its devices itself unless told (UCX_NET_DEVICES,
# which also turns weft's rails for UCX off).
if [ "$net" = ucx ]; then run "" UCX_NET_DEVICES=eth0; else run "=eth0"; fi
one_time=$TIME_US one_eth1=$ETH1
echo "# one NIC: $one_time us; host 0 sent $ETH0 bytes on eth0, $one_eth1 on eth1"

[ "$rails_used" = 2 ] || fail "the pairs between hosts took $rails_used distinct rail(s), expected 2"
total=$((rails_eth0 + rails_eth1))
[ $((rails_eth0 * 4)) -ge "$total" ] && [ $((rails_eth1 * 4)) -ge "$total" ] ||
  fail "with rails, one NIC carried less than a quarter of host 0's $total bytes"
[ "$one_eth1" -lt 1000000 ] || fail "with eth0 alone, eth1 still carried $one_eth1 bytes"
if [ -n "$rails_time" ] && [ -n "$one_time" ]; then
  awk -v r="$rails_time" -v o="$one_time" 'BEGIN { exit !(o >= 1.3 * r) }' ||
    fail "rails took $rails_time us against $one_time us on one NIC (expected at most 1/1.3 of it)"
else
  fail "no 4 MiB time (rails '$rails_time', one NIC '$one_time')"
fi
[ "$failures" -eq 0 ] || exit 1
echo "OK: two rails, $(awk -v r="$rails_time" -v o="$one_time" 'BEGIN { printf "%.2f", o / r }')x the one-NIC speed"
