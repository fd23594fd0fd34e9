#!/usr/bin/env bash
# The hierarchical and the flat ring all-reduce on 3 hosts x 2 ranks (network namespaces,
# tests/netns/hosts_lib.sh) with shaped links, each beside the cost model's prediction and the
# simulator's time for that layout (weft-info plan --simulate), after fitting the link terms the
# model prices with from two measurements on the same links:
#   Memory:  2 ranks on one host (shared memory): t = 2a + S/B_intra, Memory = (a, 2 B_intra)
#   Network: 1 rank on each of 2 hosts:           t = 2a + S/B_net,   Network = (a, B_net)
#            (a from 8 bytes, B_net from the slope above 1 MiB: tbf's burst lets smaller
#            messages through at the veth's speed)
# (Memory: weighted least squares with weights 1/t^2, as perf/fit_link_model.py). Needs root; prints a
# markdown table for docs/performance.md.
#   hierarchy_vs_model.sh BUILD_DIR [RATE] [TRANSPORT]     defaults: 1gbit, tcp
set -u
build=$(cd "${1:?usage: hierarchy_vs_model.sh BUILD_DIR [RATE] [TRANSPORT]}" && pwd)
rate=${2:-1gbit}
net=${3:-tcp}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../tests/netns/hosts_lib.sh"
hosts_create 3 "$rate"
out=$(mktemp -d)
sweep() {  # HOSTS PER ALGO FILE -- perf args
  local hosts=$1 per=$2 algo=$3 file=$4
  shift 4
  HOSTS_RUN_COUNT=$hosts HOSTS_ENV="WEFT_NET=$net WEFT_TIMEOUT=120 ${algo:+WEFT_ALGO=$algo}" \
    hosts_run_ranks "$per" "$out" "$build/perf/all_reduce_perf" "$@"
  hosts_wait_ranks || { echo "a run failed:"; tail -5 "$out"/rank*.log; exit 1; }
  grep -q "Out of bounds values : 0 OK" "$out/rank0.log" || { echo "wrong data"; exit 1; }
  cp "$out/rank0.log" "$file"
}
sweep 1 2 "" "$out/memory.txt" -b 8 -e 64M -f 4 -c 0 -w 5 -n 20
sweep 2 1 "" "$out/network.txt" -b 8 -e 64M -f 4 -c 0 -w 2 -n 5
for algo in ring hier; do sweep 3 2 $algo "$out/$algo.txt" -b 1M -e 64M -f 4 -c 1 -w 2 -n 5; done
/usr/bin/python3 - "$build" "$out" "$here/.." <<'PY'
import os, re, subprocess, sys
build, out, perf = sys.argv[1:4]
sys.path.insert(0, perf)
from fit_link_model import fit, human

def times(name):
    rows = {}
    for line in open(os.path.join(out, name + ".txt")):
        f = line.split()
        if len(f) >= 6 and f[0].isdigit():
            rows[int(f[0])] = float(f[5])
    return rows

memory, network = times("memory"), times("network")
am, km = fit(sorted(memory.items()))
# tbf lets a burst (256 KiB) through at the veth's own speed, so one line does not fit both
# ends: the latency from the smallest message (t = 2a), the bandwidth from the slope between
# 1 MiB and the largest size (the link's rate).
small, large = min(network), max(network)
mib = min(size for size in network if size >= 1 << 20)
an = network[small]
kn = (network[large] - network[mib]) / (large - mib)
tuning = os.path.join(out, "tuning.txt")
with open(tuning, "w") as t:
    t.write(f"link Memory latency_us {am / 2:.3f} bandwidth_GBps {2 / km / 1e3:.4f}\n")
    t.write(f"link Network latency_us {an / 2:.3f} bandwidth_GBps {1 / kn / 1e3:.4f}\n")
print("fitted link terms (tuning file):")
print("".join("    " + l for l in open(tuning)))
env = dict(os.environ, WEFT_TUNING_FILE=tuning)
for name in ("WEFT_ALGO", "NCCL_ALGO"):
    env.pop(name, None)
ring, hier = times("ring"), times("hier")
print("| size | ring measured | ring model | ring simulated | hier measured | hier model | hier simulated |")
print("|---|---:|---:|---:|---:|---:|---:|")
for size in sorted(ring):
    plan = subprocess.run([f"{build}/tools/weft-info", "plan", "allreduce", str(size), "--ranks", "6",
                           "--ranks-per-node", "2", "--simulate"], check=True, capture_output=True, text=True,
                          env=env).stdout
    row = {}
    for algo in ("ring", "hier"):
        m = re.search(rf"^{algo}\s+([0-9.e+-]+)\s+[0-9.e+-]+\s+([0-9.e+-]+)", plan, re.M)
        row[algo] = (float(m.group(1)), float(m.group(2)))
    print(f"| {human(size)} | {ring[size]:.0f} | {row['ring'][0]:.0f} | {row['ring'][1]:.0f} | "
          f"{hier[size]:.0f} | {row['hier'][0]:.0f} | {row['hier'][1]:.0f} |")
print("(times in us; measured: out-of-place, 3 hosts x 2 ranks)")
PY
rm -rf "$out"
