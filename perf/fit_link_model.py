#!/usr/bin/env python3
"""Fit the shared-memory link figures to a measured 2-rank all-reduce and check the model.

Runs all_reduce_perf under weftrun on 2 ranks of this host (8 B .. 64 MiB, factor 4, malloc'd
buffers, out-of-place time), WEFT_FIT_SWEEPS times (default 3), keeping each size's best time
(a shared VM stalls single iterations now and then). Two ranks on one host go through
shared-memory slots: the cost model's intra-node hop is the Memory class at half its bandwidth
(copied in, then out; algorithms/cost/cost_model.cc), and the ring on 2 ranks costs
  t = 2 (alpha + (S/2) / B_intra) = 2 alpha + S / B_intra.
The ring is forced (WEFT_ALGO=ring) in the runs and in the plans: the model would otherwise
choose recursive doubling (alpha + S / B_intra plus its extra reductions) for small sizes, and
the runs the one-shot path below 4 KiB, neither of which has that form.
The fit is weighted least squares of t against S with weights 1/t^2 (relative error, so the
latency-bound small sizes count as much as the large ones). It writes
  link Memory latency_us ALPHA bandwidth_GBps 2*B_intra
to a temporary tuning file, runs `weft-info plan allreduce SIZE --ranks 2 --simulate` with
WEFT_TUNING_FILE set for every measured size, and prints a markdown table of measured,
fitted, closed-form predicted (the chosen algorithm's time_us) and simulated (its sim_us)
times. Exit status 1 when, for a size >= 1 KiB, predicted/measured or simulated/measured is
outside [0.5, 2].
Usage: fit_link_model.py BUILD_DIR [--sweeps N] [--keep-tuning FILE]

--simulate-known LAT_US,BW_GBPS checks the fit itself: the "measurements" are the simulator's
times (weft-info plan ... --simulate) for a tuning file with those Memory terms, each scaled by
a seeded random factor within +-3% (noise like a real sweep's), and the run fails unless the fit
recovers both terms within 10% and the tuning file it writes reads back (weft-info's links line)
as exactly the fitted terms.
"""
import argparse
import math
import os
import random
import re
import subprocess
import sys
import tempfile

MIN_CHECKED_BYTES = 1024
LOW, HIGH = 0.5, 2.0


def measure(build, sweeps):
    cmd = [f"{build}/tools/weftrun", "-n", "2", "--no-prefix", f"{build}/perf/all_reduce_perf",
           "-b", "8", "-e", "64M", "-f", "4", "-c", "0", "-w", "5", "-n", "20"]
    env = dict(os.environ, WEFT_ALGO="ring")
    env.setdefault("NCCL_SOCKET_IFNAME", "lo")
    env.pop("WEFT_TUNING_FILE", None)
    env.pop("NCCL_ALGO", None)
    best = {}
    for _ in range(sweeps):
        out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
        for line in out.splitlines():
            fields = line.split()
            if len(fields) >= 6 and fields[0].isdigit():
                size, time_us = int(fields[0]), float(fields[5])
                best[size] = min(best.get(size, time_us), time_us)
    if not best:
        sys.exit("fit_link_model: no result rows from all_reduce_perf")
    return best


def simulated_measurements(build, latency_us, bandwidth_gbps):
    """The simulator's 2-rank all-reduce times for known Memory terms, with +-3% seeded noise."""
    rng = random.Random(1)
    with tempfile.NamedTemporaryFile("w", suffix=".tuning", delete=False) as f:
        f.write(f"link Memory latency_us {latency_us} bandwidth_GBps {bandwidth_gbps}\n")
        known = f.name
    try:
        sizes = [8 * 4 ** k for k in range(13)]  # 8 B .. 128 MiB, as measure() sweeps
        return {size: plan(build, size, known)[2] * rng.uniform(0.97, 1.03) for size in sizes}
    finally:
        os.unlink(known)


def fit(points):
    """Weighted least squares of t = c + k S with weights 1/t^2; returns (c, k)."""
    sw = sx = sy = sxx = sxy = 0.0
    for s, t in points:
        w = 1.0 / (t * t)
        sw += w
        sx += w * s
        sy += w * t
        sxx += w * s * s
        sxy += w * s * t
    det = sw * sxx - sx * sx
    k = (sw * sxy - sx * sy) / det
    c = (sy - k * sx) / sw
    return c, k


def plan(build, size, tuning):
    env = dict(os.environ, WEFT_TUNING_FILE=tuning, WEFT_ALGO="ring")
    env.pop("NCCL_ALGO", None)
    out = subprocess.run([f"{build}/tools/weft-info", "plan", "allreduce", str(size), "--ranks", "2", "--simulate"],
                         check=True, capture_output=True, text=True, env=env).stdout
    chosen = re.search(r"^chosen: (\w+)", out, re.M).group(1)
    row = re.search(rf"^{chosen}\s+([0-9.e+-]+)\s+([0-9.e+-]+)\s+([0-9.e+-]+)", out, re.M)
    links = re.search(r"^# links: (.*)$", out, re.M)
    return chosen, float(row.group(1)), float(row.group(3)), links.group(1) if links else ""


def human(size):
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale}{unit}"
    return str(size)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build")
    parser.add_argument("--sweeps", type=int, default=int(os.environ.get("WEFT_FIT_SWEEPS", "3")))
    parser.add_argument("--keep-tuning", help="also write the tuning file here")
    parser.add_argument("--simulate-known", metavar="LAT_US,BW_GBPS",
                        help="fit the simulator's times for these Memory terms and check it recovers them")
    args = parser.parse_args()

    known = None
    if args.simulate_known:
        known = tuple(float(v) for v in args.simulate_known.split(","))
        measured = simulated_measurements(args.build, *known)
    else:
        measured = measure(args.build, args.sweeps)
    c, k = fit(sorted(measured.items()))
    alpha = c / 2
    intra_gbps = 1.0 / (k * 1e3)  # S in bytes, t in us: k = 1 / (B * 1e3)
    note = ""
    if alpha <= 0:
        note = f" (fitted intercept {c:.4g} us is not positive; latency clamped to 0.001 us)"
        alpha = 0.001
    memory_gbps = 2 * intra_gbps
    text = (f"# fitted by perf/fit_link_model.py to a 2-rank shared-memory all-reduce\n"
            f"link Memory latency_us {alpha:.6g} bandwidth_GBps {memory_gbps:.6g}\n")
    with tempfile.NamedTemporaryFile("w", suffix=".tuning", delete=False) as f:
        f.write(text)
        tuning = f.name
    if args.keep_tuning:
        with open(args.keep_tuning, "w") as f:
            f.write(text)
    try:
        rows, links = [], ""
        for size in sorted(measured):
            chosen, predicted, simulated, links = plan(args.build, size, tuning)
            rows.append((size, measured[size], c + k * size,
                         chosen, predicted, simulated))
    finally:
        os.unlink(tuning)

    source = "simulated, +-3% noise" if known else f"best of {args.sweeps} sweeps"
    print(f"fit (weighted 1/t^2, {len(measured)} sizes, {source}): "
          f"alpha = {alpha:.4g} us per hop, shared-memory hop B = {intra_gbps:.4g} GB/s{note}")
    print(f"tuning file: link Memory latency_us {alpha:.6g} bandwidth_GBps {memory_gbps:.6g}"
          f"   (weft-info: {links})\n")
    print("| size | measured (us) | fit 2a+S/B (us) | algo | predicted (us) | simulated (us) | predicted/measured | simulated/measured |")
    print("|---:|---:|---:|:--|---:|---:|---:|---:|")
    outside = []
    for size, meas, fitted, chosen, predicted, simulated in rows:
        rp, rs = predicted / meas, simulated / meas
        flag = ""
        if size >= MIN_CHECKED_BYTES and not (LOW <= rp <= HIGH and LOW <= rs <= HIGH):
            outside.append(size)
            flag = " !"
        print(f"| {human(size)} | {meas:.2f} | {fitted:.2f} | {chosen} | {predicted:.2f} | {simulated:.2f} | "
              f"{rp:.2f} | {rs:.2f}{flag} |")
    if known:
        # The fit recovers the terms the simulator was given, and the file it wrote reads back
        # (weft-info's links line: the intra-node hop is Memory at half its bandwidth) as them.
        errors = (abs(alpha - known[0]) / known[0], abs(memory_gbps - known[1]) / known[1])
        print(f"\nknown: latency {known[0]} us, Memory {known[1]} GB/s; fitted: {alpha:.4g} us, {memory_gbps:.4g} GB/s "
              f"(errors {errors[0]:.1%}, {errors[1]:.1%})")
        expected_links = f"intra-node {intra_gbps:.6g} GB/s {alpha:.6g} us"
        read_back = re.match(r"intra-node ([0-9.e+-]+) GB/s ([0-9.e+-]+) us", links)
        # weft-info prints three significant digits.
        round_trip = read_back and math.isclose(float(read_back.group(1)), intra_gbps, rel_tol=5e-3) and \
            math.isclose(float(read_back.group(2)), alpha, rel_tol=5e-3)
        if max(errors) > 0.10 or not round_trip:
            print(f"FAILED: errors above 10%, or the tuning file read back as '{links}', not '{expected_links}'")
            return 1
    if outside:
        print(f"\noutside [{LOW}, {HIGH}] at >= 1 KiB: {', '.join(human(s) for s in outside)}")
        return 1
    print(f"\nall ratios within [{LOW}, {HIGH}] for sizes >= 1 KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
