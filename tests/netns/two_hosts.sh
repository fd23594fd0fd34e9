#!/usr/bin/env bash
# Two "hosts" as network namespaces joined by a veth pair (198.18.0.1 and 198.18.0.2), one rank
# in each, talking TCP over the veth; optionally shaped with tc tbf. Runs a perf tool on both
# and checks its data. Cleans up the namespaces whatever happens. Exit 77 = skipped (reason
# printed) where namespaces cannot be made (not root, no iproute2, no permission).
#   two_hosts.sh BUILD_DIR [--rate 1gbit] [TOOL [TOOL ARGS...]]
set -u
build=${1:?usage: two_hosts.sh BUILD_DIR [--rate RATE] [TOOL ARGS...]}
shift
rate=""
if [ "${1:-}" = "--rate" ]; then rate=$2; shift 2; fi
tool=${1:-all_reduce_perf}
[ $# -gt 0 ] && shift
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(-b 8 -e 4M -f 4 -c 1 -w 2 -n 5)

[ "$(id -u)" = 0 ] || { echo "skipped: network namespaces need root"; exit 77; }
command -v ip >/dev/null || { echo "skipped: iproute2 (ip) is not installed"; exit 77; }

tag=$$
nsA=weft-a-$tag nsB=weft-b-$tag
devA=wfa$tag devB=wfb$tag
cleanup() {
  ip netns del "$nsA" 2>/dev/null
  ip netns del "$nsB" 2>/dev/null
}
trap cleanup EXIT
ip netns add "$nsA" 2>/dev/null || { echo "skipped: cannot create network namespaces here"; exit 77; }
ip netns add "$nsB" || exit 1
ip link add "$devA" type veth peer name "$devB" || { echo "skipped: cannot create veth pairs here"; exit 77; }
ip link set "$devA" netns "$nsA" && ip link set "$devB" netns "$nsB" || exit 1
ip -n "$nsA" addr add 198.18.0.1/24 dev "$devA" && ip -n "$nsB" addr add 198.18.0.2/24 dev "$devB" || exit 1
for ns in "$nsA" "$nsB"; do ip -n "$ns" link set lo up || exit 1; done
ip -n "$nsA" link set "$devA" up && ip -n "$nsB" link set "$devB" up || exit 1
if [ -n "$rate" ]; then
  command -v tc >/dev/null || { echo "skipped: tc is not installed"; exit 77; }
  ip netns exec "$nsA" tc qdisc add dev "$devA" root tbf rate "$rate" burst 256kb latency 50ms || exit 1
  ip netns exec "$nsB" tc qdisc add dev "$devB" root tbf rate "$rate" burst 256kb latency 50ms || exit 1
  echo "# link shaped with tc tbf to $rate each way"
fi

port=$((20000 + RANDOM % 20000))
secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
outA=$(mktemp) outB=$(mktemp)
run_rank() {  # ns dev rank host out
  ip netns exec "$1" env RANK="$3" WORLD_SIZE=2 MASTER_ADDR=198.18.0.1 MASTER_PORT=$port WEFT_SECRET="$secret" \
    WEFT_HOSTNAME="$4" NCCL_SOCKET_IFNAME="$2" WEFT_TIMEOUT=60 \
    timeout 300 "$build/perf/$tool" "${args[@]}" >"$5" 2>&1
}
run_rank "$nsA" "$devA" 0 hostA "$outA" &
pidA=$!
run_rank "$nsB" "$devB" 1 hostB "$outB" &
pidB=$!
wait $pidA; rcA=$?
wait $pidB; rcB=$?
cat "$outA"
[ $rcB -ne 0 ] && { echo "--- rank 1:"; cat "$outB"; }
ok=0
grep -q "Out of bounds values : 0 OK" "$outA" || ok=1
rm -f "$outA" "$outB"
[ $rcA -eq 0 ] && [ $rcB -eq 0 ] && [ $ok -eq 0 ] && exit 0
echo "FAILED: rank exit codes $rcA/$rcB, data check $ok"
exit 1
