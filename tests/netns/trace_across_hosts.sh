#!/usr/bin/env bash
# WEFT_TRACE across hosts: 2 hosts x 2 ranks run all_reduce_perf with a trace per process;
# `weft-info trace merge` joins the four files. The hosts are namespaces of one kernel, so their
# clocks agree: every measured offset to rank 0 must be within half its round trip (plus 50 us),
# and every all-reduce's spans on the four ranks must overlap (no rank ends a collective before
# another starts it), which they only do on one time base. Exit 77 = skipped.
#   trace_across_hosts.sh BUILD_DIR
set -u
build=${1:?usage: trace_across_hosts.sh BUILD_DIR}
. "$(dirname "$0")/hosts_lib.sh"
hosts_create 2
out=$(mktemp -d)
HOSTS_ENV="WEFT_TRACE=$out/trace.%p.json"
hosts_run_ranks 2 "$out" "$build/perf/all_reduce_perf" -b 8 -e 1M -f 8 -c 1 -w 1 -n 5
hosts_wait_ranks || { echo "FAILED: a rank failed"; tail -n 5 "$out"/rank*.log; exit 1; }
"$build/tools/weft-info" trace merge "$out/merged.json" "$out"/trace.*.json || { echo "FAILED: merge"; exit 1; }
/usr/bin/python3 - "$out/merged.json" <<'PY' || { rm -rf "$out"; exit 1; }
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
procs = {e["pid"]: e["args"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
assert sorted(procs) == [0, 1, 2, 3], procs
for rank, args in sorted(procs.items()):
    offset, rtt = args["clock_offset_to_rank0_us"], args["clock_round_trip_us"]
    print(f"rank {rank}: {args['name']}: offset {offset:+.3f} us, round trip {rtt:.3f} us")
    assert abs(offset) <= rtt / 2 + 50, (rank, offset, rtt)
    assert (rtt > 0) == (rank >= 2), (rank, rtt)  # measured on host 1 only
calls = {}
for e in events:
    if e["ph"] == "X" and e["cat"] == "collective" and e["name"] == "allreduce":
        calls.setdefault(e["args"]["sequence"], []).append((e["ts"], e["ts"] + e["dur"], e["pid"]))
assert len(calls) > 20 and all(len(v) == 4 for v in calls.values()), {k: len(v) for k, v in calls.items()}
# An all-reduce cannot end on one rank before every rank started it (each needs the others' data).
for seq, spans in sorted(calls.items()):
    latest_start, earliest_end = max(s for s, _, _ in spans), min(e for _, e, _ in spans)
    assert latest_start <= earliest_end + 100, (seq, spans)  # 100 us: the offsets' error
steps = [e for e in events if e["ph"] == "X" and e["cat"] == "step"]
print(len(calls), "collectives on 4 ranks overlap on one time line;", len(steps), "step spans")
PY
status=$?
rm -rf "$out"
exit $status
