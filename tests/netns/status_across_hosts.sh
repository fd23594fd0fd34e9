#!/usr/bin/env bash
# weft-info status across hosts: 2 hosts x 2 ranks, rank 3 (on host 1) sleeps before the fourth
# all-reduce; `weft-info status` run on host 0 must name rank 3 and the collective, reaching
# host 1's ranks through a process of the job on host 0 (runtime/status/remote_status.h), in
# under 2 s. Then the job must finish right. Second run, with a 2 s time-out on rank 0 alone:
# its error must name rank 3 too, having asked host 1's ranks. (Were every rank to time out at
# once, a peer could exit while being asked.) Exit 77 = skipped.
#   status_across_hosts.sh BUILD_DIR
set -u
build=${1:?usage: status_across_hosts.sh BUILD_DIR}
. "$(dirname "$0")/hosts_lib.sh"
hosts_create 2
HOSTS_ENV="WEFT_TIMEOUT=60 STALL_RANK=3 STALL_SECONDS=6"
out=$(mktemp -d)
hosts_run_ranks 2 "$out" "$build/tests/stalled_all_reduce"
status=1
# The ranks need a moment to start and the others to wait a second in all-reduce #3: ask
# every 0.5 s, at most 20 times (10 s, past the stall: then the test fails).
for ((try = 0; try < 20; try++)); do
  sleep 0.5
  start=$(date +%s%N)
  text=$(ip netns exec "$(hosts_ns 0)" "$build/tools/weft-info" status 2>&1)
  took_ms=$((($(date +%s%N) - start) / 1000000))
  if grep -q "culprit: rank 3 (host host1, pid [0-9]*) has not issued allreduce #3" <<<"$text"; then
    echo "$text"
    echo "answered in $took_ms ms"
    if [ "$took_ms" -gt 2000 ]; then
      echo "FAILED: weft-info status took $took_ms ms (more than 2 s)"
    elif [ "$(grep -c "^  rank [0-3] (host host[01], pid [0-9]*): [0-9]* issued" <<<"$text")" != 4 ]; then
      echo "FAILED: not every rank answered"
    else
      status=0
    fi
    break
  fi
done
[ $status -ne 0 ] && { echo "FAILED: no culprit line naming rank 3; last answer:"; echo "$text"; }
hosts_wait_ranks || { echo "FAILED: a rank failed"; tail -n 5 "$out"/rank*.log; status=1; }

HOSTS_ENV="WEFT_TIMEOUT=30 TIMEOUT_RANK=0 TIMEOUT_SECONDS=2 STALL_RANK=3 STALL_SECONDS=5"
HOSTS_ENV+=" WEFT_DUMP_FILE=$out/records.r%r.txt"
hosts_run_ranks 2 "$out" "$build/tests/stalled_all_reduce"
hosts_wait_ranks  # they fail: rank 0 gives up before rank 3 comes
if grep -q "^culprit: rank 3 (host host1, pid [0-9]*) has not issued allreduce #3" "$out/rank0.log" &&
  grep -q "^  rank 2 (host host1, pid [0-9]*): in allreduce #3" "$out/rank0.log"; then
  echo "rank 0's time-out names rank 3 and what rank 2 on the other host was doing:"
  grep -A6 "^what its peers say" "$out/rank0.log" | head -8
  # Rank 2, waiting in the all-reduce on host 1, wrote its record when rank 0 asked.
  if ! grep -q "^# weft collective record: rank 2 of 4" "$out/records.r2.txt" 2>/dev/null; then
    echo "FAILED: rank 2 did not dump its record when asked across hosts"
    status=1
  fi
else
  echo "FAILED: rank 0's time-out does not name rank 3 with host 1's answers:"
  cat "$out/rank0.log"
  status=1
fi
rm -rf "$out"
exit $status
