#!/usr/bin/env bash
# A rank killed on one host while H hosts x R ranks run all-reduces: every other rank must fail
# with an error, not hang, within WEFT_TIMEOUT (10 s here) and a margin. Exit 77 = skipped.
#   rank_killed.sh BUILD_DIR HOSTS RANKS_PER_HOST NET
set -u
build=${1:?usage: rank_killed.sh BUILD_DIR HOSTS RANKS NET}
hosts=$2 per=$3 net=$4
timeout_s=10
. "$(dirname "$0")/hosts_lib.sh"
hosts_create "$hosts"
HOSTS_ENV="WEFT_NET=$net WEFT_TIMEOUT=$timeout_s"
out=$(mktemp -d)
hosts_run_ranks "$per" "$out" "$build/perf/all_reduce_perf" -b 1M -e 1M -c 0 -w 1 -n 1000000
victim=$per  # the first rank of host 1
# Kill it once the ranks are past init and running all-reduces (the perf tool's output is
# buffered, so there is nothing to watch for: 3 s is well past init here).
sleep 3
# The rank runs under timeout(1), which forks it: kill the rank itself.
pkill -9 -P "${HOSTS_PIDS[victim]}"
killed_at=$(date +%s)
failed_in_time=0 survivors=0 status=0
for rank in "${!HOSTS_PIDS[@]}"; do
  [ "$rank" = "$victim" ] && continue
  survivors=$((survivors + 1))
  pid=${HOSTS_PIDS[rank]}
  # Each survivor must exit by the time-out plus 20 s of margin; then it is killed.
  for ((i = 0; i < (timeout_s + 20) * 10; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    echo "FAILED: rank $rank still running $(($(date +%s) - killed_at)) s after rank $victim was killed"
    status=1
    continue
  fi
  wait "$pid"
  rc=$?
  if [ $rc -ne 0 ] && grep -qiE "error|failed" "$out/rank$rank.log"; then
    failed_in_time=$((failed_in_time + 1))
    echo "rank $rank: exit $rc after $(($(date +%s) - killed_at)) s: $(grep -iE "error|failed" "$out/rank$rank.log" | head -1)"
  else
    echo "FAILED: rank $rank exited $rc without an error message"
    tail -5 "$out/rank$rank.log"
    status=1
  fi
done
HOSTS_PIDS=()
rm -rf "$out"
[ $status -eq 0 ] && [ $failed_in_time -eq $survivors ] && { echo "all $survivors survivors failed with an error in time"; exit 0; }
exit 1
