#!/usr/bin/env python3
"""2-rank all-reduce sweep beside the memcpy ceiling, as one table.

Runs memcpy_bandwidth (the ceiling: single-thread memcpy, bytes read + written per second)
before and after the sweeps and keeps the better value, then all_reduce_perf under weftrun
with ordinary (malloc'd) buffers and with ncclMemAlloc'd buffers, and prints each size's
busbw beside the shared-memory bounds derived from the ceiling:
  bounce buffer (malloc'd buffers):   memcpy / 4
  direct (ncclMemAlloc'd buffers):    memcpy / 2.5
Each sweep runs WEFT_REPORT_SWEEPS times (default 3) and each size keeps its best time: on a
shared VM single sweeps show occasional stalls of a few hundred microseconds that are not
weft's (the same size alone is steady); the #wrong column sums every sweep. A sweep run while
the VM's vCPUs were placed far apart (perf/vm_phase.py: shared memory is then 2-8x slower) runs
again, up to 3 times; the header says how many.
Usage: allreduce_ceiling_report.py BUILD_DIR [all_reduce_perf flags...]
"""
import os
import re
import subprocess
import sys

from vm_phase import PhaseGuard


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def ceiling(build):
    """(one thread alone, each of two threads copying at once), read+write GB/s."""
    out = run([f"{build}/perf/memcpy_bandwidth"])
    alone = float(re.search(r"read\+write\): ([0-9.]+) GB/s", out).group(1))
    together = re.search(r"2 threads at once .*: ([0-9.]+) GB/s each", out)
    return alone, float(together.group(1)) if together else None


def best_of(sweeps):
    best = {}
    for rows in sweeps:
        for size, row in rows.items():
            kept = best.setdefault(size, dict(row, oop_wrong=0, ip_wrong=0))
            kept["time"] = min(kept["time"], row["time"])
            kept["oop"] = max(kept["oop"], row["oop"])
            kept["ip"] = max(kept["ip"], row["ip"])
            for key in ("oop_wrong", "ip_wrong"):
                kept[key] += int(row[key]) if row[key].isdigit() else 0
    for row in best.values():
        row["oop_wrong"], row["ip_wrong"] = str(row["oop_wrong"]), str(row["ip_wrong"])
    return best


# 8 B to 128 MiB by factors of 4, then 256 MiB (a factor of 4 from 8 B steps over it).
SWEEPS = (["-b", "8", "-e", "128M", "-f", "4"], ["-b", "256M", "-e", "256M"])


def sweep(build, extra, memalloc):
    rows = {}
    for sizes in SWEEPS:
        cmd = [f"{build}/tools/weftrun", "-n", "2", "--no-prefix", f"{build}/perf/all_reduce_perf", *sizes,
               "-c", "1", "-w", "5", "-n", "20", "-R", "1" if memalloc else "0"] + extra
        for line in run(cmd).splitlines():
            fields = line.split()
            if len(fields) >= 13 and fields[0].isdigit():
                size = int(fields[0])
                rows[size] = dict(time=float(fields[5]), oop=float(fields[7]), oop_wrong=fields[8],
                                  ip=float(fields[11]), ip_wrong=fields[12])
    return rows


def main():
    build = sys.argv[1]
    extra = sys.argv[2:]
    repeats = int(os.environ.get("WEFT_REPORT_SWEEPS", "3"))
    before = ceiling(build)
    guard = PhaseGuard(build)
    plain = best_of([guard.measure(lambda: sweep(build, extra, False)) for _ in range(repeats)])
    shared = best_of([guard.measure(lambda: sweep(build, extra, True)) for _ in range(repeats)])
    after = ceiling(build)
    memcpy = max(before[0], after[0])
    bounce, direct = memcpy / 4, memcpy / 2.5
    print(f"best of {repeats} sweeps per buffer kind; "
          f"memcpy ceiling (1 thread, read+write): {memcpy:.2f} GB/s; "
          f"bounds: bounce {bounce:.2f} GB/s (memcpy/4), direct {direct:.2f} GB/s (memcpy/2.5)")
    # Two ranks copy at the same time; where the memory system cannot feed two full-speed
    # copies, the bounds above are out of reach, and this line says by how much.
    together = [rate for rate in (before[1], after[1]) if rate]
    if together:
        both = max(together)
        print(f"memcpy with 2 threads at once: {both:.2f} GB/s each ({100 * both / memcpy:.0f}% of one alone); "
              f"bounds at that rate: bounce {both / 4:.2f}, direct {both / 2.5:.2f} GB/s")
    print(guard.summary() + "\n")
    print("| size (B) | malloc: time (us) | busbw out / in-place (GB/s) | % of bounce bound | "
          "ncclMemAlloc: busbw out / in-place (GB/s) | % of direct bound | #wrong |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    wrong_total = 0
    for size in sorted(plain):
        p, s = plain[size], shared.get(size)
        wrong = [p["oop_wrong"], p["ip_wrong"]] + ([s["oop_wrong"], s["ip_wrong"]] if s else [])
        wrong_total += sum(int(w) for w in wrong if w.isdigit())
        shared_text = f"{s['oop']:.2f} / {s['ip']:.2f}" if s else "-"
        shared_pct = f"{100 * s['oop'] / direct:.0f}%" if s else "-"
        print(f"| {size} | {p['time']:.2f} | {p['oop']:.2f} / {p['ip']:.2f} | {100 * p['oop'] / bounce:.0f}% | "
              f"{shared_text} | {shared_pct} | {'/'.join(wrong)} |")
    return 1 if wrong_total else 0


if __name__ == "__main__":
    sys.exit(main())
