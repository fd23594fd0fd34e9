#!/usr/bin/env bash
# weft-characterize end to end on 2 ranks of this host (issue 16):
#   1. a short full run: exit 0, a complete document whose every sweep row was checked with 0
#      wrong elements, every collective with its algorithms, the default-against-tuned
#      rows, the tuning file, the report and its plots (PNG sizes sane);
#   2. --budget 8 with sizes up to 64M: finishes within the budget plus the report's time, with
#      the sizes it dropped listed as skipped;
#   3. SIGINT to weftrun in the middle of the sweep: the ranks stop together, and the document
#      (stopped_by "interrupt") and a report of what was measured are still written.
#   characterize_run.sh BUILD_DIR
set -u
build=${1:?usage: characterize_run.sh BUILD_DIR}
/usr/bin/python3 -c "import matplotlib" 2>/dev/null || { echo "skipped: matplotlib is not installed for /usr/bin/python3"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export NCCL_SOCKET_IFNAME=lo
status=0
fail() { echo "FAILED: $*"; status=1; }

# Checks a document against the schema kept in the repository and the mode's expectations;
# prints its problems.
schema=$(cd "$(dirname "$0")/../.." && pwd)/tools/characterize/characterize.schema.json
check_doc() {
  /usr/bin/python3 - "$@" "$schema" <<'PY'
import json, struct, sys, os
import jsonschema
path, mode, schema = sys.argv[1], sys.argv[2], sys.argv[3]
d = json.load(open(path))
problems = []
try:
    jsonschema.validate(d, json.load(open(schema)))
except jsonschema.ValidationError as e:
    problems.append(f"not valid by {os.path.basename(schema)}: {e.message} at {list(e.absolute_path)}")
for key in ("tool", "format", "nranks", "ranks", "hosts", "p2p", "sweep", "selection", "skipped", "complete", "stopped_by"):
    if key not in d: problems.append(f"no '{key}'")
if d.get("nranks") != 2 or len(d.get("ranks", [])) != 2: problems.append("not 2 ranks")
pairs = d.get("p2p", {}).get("pairs", [])
if mode == "full":
    if not d["complete"]: problems.append(f"not complete: {d['stopped_by']}")
    if len(pairs) != 2: problems.append(f"{len(pairs)} point-to-point directions, not 2")
    for p in pairs:
        if not (p["latency_us"] > 0 and p["bandwidth_GBps"] > 0): problems.append(f"pair {p}")
    colls = {}
    for r in d["sweep"]:
        if r["wrong"] != 0: problems.append(f"row {r['collective']} {r['algorithm']} {r['size']}: wrong {r['wrong']}")
        if len(r["rank_avg_us"]) != 2: problems.append("a row without both ranks' times")
        colls.setdefault(r["collective"], set()).add(r["algorithm"])
    # Every collective, with every algorithm weft has for it (gather and scatter have one).
    for c, least in (("all_reduce", 4), ("all_gather", 2), ("reduce_scatter", 2), ("broadcast", 2), ("reduce", 2),
                     ("alltoall", 2), ("gather", 1), ("scatter", 1)):
        if len(colls.get(c, ())) < least: problems.append(f"{c}: algorithms {sorted(colls.get(c, ()))}")
    if len(d["selection"]) == 0: problems.append("no default-against-tuned rows")
    if not d.get("tuning_file") or not os.path.exists(d["tuning_file"]): problems.append("no tuning file")
    out = os.path.dirname(path)
    for png in ("busbw_all_reduce.png", "p2p_bandwidth.png", "p2p_latency.png", "predicted_vs_measured.png", "outliers.png"):
        with open(os.path.join(out, png), "rb") as f:
            head = f.read(24)
        w, h = struct.unpack(">II", head[16:24])
        if head[:8] != b"\x89PNG\r\n\x1a\n" or not (200 <= w <= 4000 and 200 <= h <= 4000):
            problems.append(f"{png}: {w}x{h}")
elif mode == "budget":
    if not d["skipped"]: problems.append("nothing skipped under a budget")
elif mode == "interrupt":
    if d["stopped_by"] != "interrupt" or d["complete"]: problems.append(f"stopped_by '{d['stopped_by']}', complete {d['complete']}")
print("\n".join(problems))
PY
}

# 1. Short full run.
start=$(date +%s)
if ! timeout 240 "$build/tools/weftrun" -n 2 "$build/tools/weft-characterize" --out "$out/full" --max-size 256K \
  -n 5 -w 1 >"$out/full.log" 2>&1; then
  fail "the short run failed"; tail -20 "$out/full.log"
fi
echo "short run: $(($(date +%s) - start)) s"
problems=$(check_doc "$out/full/characterize.json" full 2>&1)
[ -n "$problems" ] && fail "short run: $problems"
for f in report.md report.html weft.tuning analysis.json; do [ -s "$out/full/$f" ] || fail "short run: no $f"; done
grep -q "^link Memory" "$out/full/weft.tuning" || fail "no Memory terms in the tuning file"

# 2. Budget.
start=$(date +%s)
timeout 240 "$build/tools/weftrun" -n 2 "$build/tools/weft-characterize" --out "$out/budget" --budget 8 \
  --no-report >"$out/budget.log" 2>&1 || { fail "the budget run failed"; tail -20 "$out/budget.log"; }
took=$(($(date +%s) - start))
echo "budget 8 s: took $took s"
[ "$took" -le 20 ] || fail "a budget of 8 s took $took s"
problems=$(check_doc "$out/budget/characterize.json" budget 2>&1)
[ -n "$problems" ] && fail "budget run: $problems"

# 3. Interrupt in the middle of the sweep (64M rows take long enough). weftrun itself gets the
# SIGINT, as from a terminal (under timeout(1) it would get it twice and kill the ranks).
"$build/tools/weftrun" --timeout 240 -n 2 "$build/tools/weft-characterize" --out "$out/int" --collectives all_reduce \
  --max-size 64M -n 50 >"$out/int.log" 2>&1 &
launcher=$!
for ((i = 0; i < 200; i++)); do  # up to 20 s for the sweep to start
  grep -q "sweep:" "$out/int.log" 2>/dev/null && break
  sleep 0.1
done
sleep 1
kill -INT "$launcher"
wait "$launcher"
problems=$(check_doc "$out/int/characterize.json" interrupt 2>&1)
[ -n "$problems" ] && { fail "interrupted run: $problems"; tail -20 "$out/int.log"; }
# The report of an interrupted run is written by a process of its own (weftrun kills the ranks
# 2 s after forwarding Ctrl-C): wait for it, up to 60 s.
for ((i = 0; i < 600; i++)); do
  [ -s "$out/int/report.html" ] && break
  sleep 0.1
done
[ -s "$out/int/report.md" ] || { fail "no report after the interrupt"; tail -20 "$out/int.log"; cat "$out/int/report.log"; }
grep -q "interrupt" "$out/int/report.md" || fail "the report does not say the run was interrupted"
exit $status
