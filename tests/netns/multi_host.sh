#!/usr/bin/env bash
# H hosts x R ranks (network namespaces on a bridge, tests/netns/hosts_lib.sh) run one perf
# tool with data checking; every rank must exit 0 and rank 0 report no wrong values.
# Exit 77 = skipped (reason printed) where namespaces cannot be made.
#   multi_host.sh BUILD_DIR HOSTS RANKS_PER_HOST [--rate RATE] [--net ucx|tcp] TOOL [TOOL ARGS...]
set -u
build=${1:?usage: multi_host.sh BUILD_DIR HOSTS RANKS [--rate RATE] [--net NET] TOOL [ARGS...]}
hosts=$2 per=$3
shift 3
rate="" net=""
while [ $# -gt 0 ]; do
  case $1 in
    --rate) rate=$2; shift 2 ;;
    --net) net=$2; shift 2 ;;
    *) break ;;
  esac
done
tool=${1:-all_reduce_perf}
[ $# -gt 0 ] && shift
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(-b 8 -e 4M -f 8 -c 1 -w 2 -n 5)

. "$(dirname "$0")/hosts_lib.sh"
hosts_create "$hosts" "$rate"
[ -n "$net" ] && HOSTS_ENV="$HOSTS_ENV WEFT_NET=$net"
HOSTS_ENV="$HOSTS_ENV WEFT_TIMEOUT=60 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=NET"
out=$(mktemp -d)
hosts_run_ranks "$per" "$out" "$build/perf/$tool" "${args[@]}"
hosts_wait_ranks
failed=$?
grep -v "INFO" "$out/rank0.log"
# Which transport each pair used, as rank 0 logged it.
grep -ho "via [A-Za-z]* (host [a-z0-9]*)" "$out"/rank*.log | sort | uniq -c
ok=0
grep -q "Out of bounds values : 0 OK" "$out/rank0.log" || ok=1
if [ -n "$net" ] && ! grep -qi "via $net (host" "$out"/rank*.log; then
  echo "FAILED: no pair between hosts used $net"
  ok=1
fi
if [ $failed -ne 0 ] || [ $ok -ne 0 ]; then
  for f in "$out"/rank*.log; do echo "--- $f"; tail -20 "$f"; done
  echo "FAILED: $failed rank(s) failed, data check $ok"
  rm -rf "$out"
  exit 1
fi
rm -rf "$out"
exit 0
