#!/usr/bin/env python3
"""tools/scripts/characterize_report.py on synthetic weft-characterize documents.

Usage: characterize_report_test.py BUILD_DIR   (BUILD_DIR/tools/weft-info prices the plans)

The documents are made from known terms: 3 hosts x 2 ranks, pairs on a host at 0.7 us and
12 GB/s, pairs across hosts at 25 us and 1.2 GB/s, each time scaled by a seeded factor within
+-3%; in the main document host h2's pairs across hosts run at a quarter of the bandwidth,
rank 3 takes 1.5x the others' time in every sweep row and one row has a 60% cv. Checks: h2 and
exactly its 8 pairs across hosts are named, rank 3 is, the high-cv row is; a baseline with 20%
higher busbw (and h2 at full speed) gives busbw regressions and names h2 defective; a rules line
with a bad op fails naming the file and line; on the clean document the fit recovers both
classes' terms within 10% and the tuning file reads back through weft-info's "# links:" line as
the fit; the PNGs exist with sane IHDR sizes; report.html has no external reference; an
interrupted document (no p2p, no sweep) still gives a report that says what is missing.
Exit 77 ("skipped: ...") without matplotlib.
"""
import json
import math
import os
import random
import re
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "tools", "scripts", "characterize_report.py")
HOSTS = {"h0": [0, 1], "h1": [2, 3], "h2": [4, 5]}
HOST_OF = {r: h for h, ranks in HOSTS.items() for r in ranks}
INTRA = (0.7, 12.0)      # alpha us, B GB/s
ACROSS = (25.0, 1.2)
P2P_SIZES = [8, 1024, 65536, 1 << 20, 4 << 20]
SWEEP_SIZES = [8 * 4 ** k for k in range(11)]  # 8 B .. 8 MiB
# Synthetic collective times, us = a + S / b: crossovers inside the sweep.
MODELS = {"all_reduce": {"ring": (10, 2000), "tree": (4, 800), "rhd": (6, 1500), "hier": (8, 1900)},
          "all_gather": {"ring": (9, 2500), "rhd": (5, 1200), "bruck": (6, 900)}}
SLOW_RANK, HIGH_CV_ROW = 3, ("all_reduce", "rhd", 32768)
# A row with a high cv but a stdev under the 5 us floor: scheduler noise, not named.
NOISY_TINY_ROW = ("all_reduce", "ring", 8)

failures = []


def check(ok, what):
    print(("ok: " if ok else "FAILED: ") + what)
    if not ok:
        failures.append(what)


def make_doc(slow_host, seed=1, busbw_scale=1.0, complete=True):
    rng = random.Random(seed)
    noise = lambda: rng.uniform(0.97, 1.03)  # noqa: E731
    n = 6
    pairs = []
    for frm in range(n):
        for to in range(n):
            if frm == to:
                continue
            same = HOST_OF[frm] == HOST_OF[to]
            alpha, bw = INTRA if same else ACROSS
            if slow_host and not same and "h2" in (HOST_OF[frm], HOST_OF[to]):
                bw /= 4
            times = {str(s): (alpha + s / (bw * 1e3)) * noise() for s in P2P_SIZES}
            pairs.append({"from": frm, "to": to, "class": "same_numa" if same else "across_hosts",
                          "latency_us": times["8"], "times_us": times,
                          "bandwidth_GBps": P2P_SIZES[-1] / (times[str(P2P_SIZES[-1])] * 1e3)})
    sweep = []
    for coll, algos in MODELS.items():
        factor = 2 * (n - 1) / n if coll == "all_reduce" else (n - 1) / n
        for algo, (a, b) in algos.items():
            for s in SWEEP_SIZES:
                t = (a + s / b) * noise() / busbw_scale
                ranks = [t * rng.uniform(0.98, 1.02) * (1.5 if r == SLOW_RANK else 1.0) for r in range(n)]
                cv = 60.0 if (coll, algo, s) in (HIGH_CV_ROW, NOISY_TINY_ROW) else 3.0
                sweep.append({"collective": coll, "algorithm": algo, "ran": algo, "size": s, "count": s // 4,
                              "type": "float", "redop": "sum", "time_us": t, "algbw_GBps": s / t / 1e3,
                              "busbw_GBps": factor * s / t / 1e3, "wrong": 0,
                              "iter_us": {"min": t * 0.9, "max": t * 1.2, "avg": t, "p50": t, "p95": t * 1.1,
                                          "p99": t * 1.2, "cv_pct": cv,
                                          "stdev": 1.0 if (coll, algo, s) == NOISY_TINY_ROW else t * cv / 100},
                              "rank_avg_us": ranks})
    hosts = [{"host": h, "ranks": ranks, "packages": 1, "numa_nodes": 1, "cores": 2, "pus": 2,
              "memory_bytes": 8 << 30, "cpu_model": "Test CPU", "gpus": [],
              "nics": [{"name": "eth0", "speed_gbps": 10}]
              + ([{"name": "eth1", "speed_gbps": 10}] if h == "h2" else [])}
             for h, ranks in HOSTS.items()]
    ranks = [{"rank": r, "host": HOST_OF[r], "pid": 100 + r, "numa_node": 0, "package": 0, "cpuset": "0x3",
              "nic": "eth0", "nic_speed_gbps": 10} for r in range(n)]
    return {"tool": "weft-characterize", "format": 1, "weft_version": "test", "start_time": "2026-12-04T00:00:00",
            "end_time": "2026-12-04T00:01:00", "elapsed_s": 60.0, "complete": complete,
            "stopped_by": "" if complete else "interrupt", "args": ["weft-characterize", "--out", "x"],
            "options": {"min_bytes": 8, "max_bytes": 8 << 20, "factor": 4, "iters": 20, "warmup": 5, "budget_s": 0},
            "nranks": n, "ranks": ranks, "hosts": hosts,
            "p2p": {"sizes": P2P_SIZES, "iters": 20, "pairs": pairs}, "sweep": sweep,
            "selection": [{"collective": "all_reduce", "size": 1 << 20, "default_algorithm": "ring",
                           "default_us": 600.0, "tuned_algorithm": "rhd", "tuned_us": 550.0},
                          {"collective": "all_reduce", "size": 4 << 20, "default_algorithm": "ring",
                           "default_us": 2100.0, "tuned_algorithm": "rhd", "tuned_us": 2400.0},
                          {"collective": "all_reduce", "size": 16 << 20, "default_algorithm": "ring",
                           "default_us": 8000.0, "tuned_algorithm": "ring", "tuned_us": 9000.0}],
            "tuning_file": None, "skipped": [{"what": "all_reduce rhd 64M", "why": "budget"}]}


def write(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def run(args, build):
    cmd = ["/usr/bin/python3", SCRIPT] + args + ["--weft-info", os.path.join(build, "tools", "weft-info")]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", head[16:24])


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("skipped: matplotlib is missing (Debian: python3-matplotlib)")
        return 77
    build = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="characterize_report_test.")

    # 1. The main document: a slow host, a slow rank, a noisy row; a baseline and a rules file.
    main_json = write(os.path.join(tmp, "main.json"), make_doc(slow_host=True))
    base_json = write(os.path.join(tmp, "base.json"), make_doc(slow_host=False, seed=2, busbw_scale=1.2))
    out = os.path.join(tmp, "main")
    p = run([main_json, "--out", out, "--baseline", base_json], build)
    print("\n".join(p.stdout.splitlines()[-12:]), p.stderr[-2000:])
    check(p.returncode == 0, f"main document: exit 0 (got {p.returncode})")
    with open(os.path.join(out, "analysis.json")) as f:
        analysis = json.load(f)
    outliers = analysis["outliers"]
    hosts = {o["host"] for o in outliers if o["kind"] == "host"}
    check(hosts == {"h2"}, f"the slow host is named, alone: {hosts}")
    named = {tuple(o["pair"]) for o in outliers if o["kind"] == "pair"}
    expected = {(i, j) for i in range(6) for j in range(i + 1, 6)
                if HOST_OF[i] != HOST_OF[j] and "h2" in (HOST_OF[i], HOST_OF[j])}
    check(named == expected, f"exactly h2's pairs across hosts are named: {sorted(named)}")
    check(any(re.search(r"host h2: 8 of 8 across_hosts pairs below half", o["text"]) for o in outliers),
          "the host line says how many of its pairs are slow")
    ranks = {o["rank"] for o in outliers if o["kind"] == "rank"}
    check(ranks == {SLOW_RANK}, f"the rank slowed in every row is named, alone: {ranks}")
    spread = [tuple(o["row"]) for o in outliers if o["kind"] == "spread"]
    check(spread == [HIGH_CV_ROW], f"the high-cv row is named, alone: {spread}")
    check("outlier: host h2" in p.stdout and "outlier: rank 3" in p.stdout, "outliers are printed on stdout")
    metrics = {r["metric"] for r in analysis["regressions"]}
    busbw = [r for r in analysis["regressions"] if r["metric"] == "busbw_drop_pct"]
    check(len(busbw) == sum(len(a) for a in MODELS.values()) * len(SWEEP_SIZES),
          f"20% higher baseline busbw: every row regressed ({len(busbw)} rows; metrics {sorted(metrics)})")
    defective = {d["host"] for d in analysis["defective_hosts"]}
    check(defective == {"h2"}, f"the baseline's h2 at full speed: h2 defective, alone: {defective}")
    diffs = analysis["host_differences"]
    check("h2: 2 NICs (others: 1)" in diffs, f"host differences name h2's extra NIC: {diffs}")
    with open(os.path.join(out, "report.md")) as f:
        report = f.read()
    for section in ("## Run", "## Hosts", "## Point to point", "## Fitted link terms", "## Sweep",
                    "## Predicted against measured", "## Crossovers", "## Default against tuned selection",
                    "## Outliers", "### Regressions", "tuned slower by 14.3%", "same choice (the ratio is noise)",
                    "chose differently in 2 of 3 rows; in 1 of those", "all_reduce rhd 64M: budget"):
        check(section in report, f"report.md has '{section}'")
    check(analysis["predictions"]["rows"] and all(r["default_us"] for r in analysis["predictions"]["rows"]),
          f"every sweep row has a prediction ({len(analysis['predictions']['rows'])} rows, "
          f"{analysis['predictions']['weft_info_calls']} weft-info calls)")
    check(analysis["predictions"]["weft_info_calls"] < 300, "fewer than 300 weft-info calls")
    cross = analysis["crossovers"]["all_reduce"]["measured"]
    check([c["from"] for c in cross][:1] == ["tree"], f"measured all-reduce crossovers start from tree: {cross}")

    for name in ("busbw_all_reduce.png", "busbw_all_gather.png", "p2p_bandwidth.png", "p2p_latency.png",
                 "predicted_vs_measured.png", "outliers.png"):
        size = png_size(os.path.join(out, name)) if os.path.exists(os.path.join(out, name)) else None
        check(size is not None and all(200 <= v <= 4000 for v in size), f"{name}: a PNG of {size}")
    with open(os.path.join(out, "report.html")) as f:
        page = f.read()
    # The embedded PNGs are base64 (which may spell anything); the rest must not point outside.
    bare = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "data:", page)
    check(page.count("data:image/png;base64,") >= 6, "report.html embeds the PNGs")
    check("http" not in bare.lower() and "href" not in bare.lower(), "report.html has no http or href")
    check(all(s.startswith("data:") for s in re.findall(r"src=\"([^\"]*)\"", bare)), "every src= is a data URI")

    # 2. Rules: a bad op is an error naming the file and line.
    rules = os.path.join(tmp, "rules.txt")
    with open(rules, "w") as f:
        f.write("busbw_drop_pct > 5\n# a comment\ntime_rise_pct => 5\n")
    p = run([main_json, "--out", os.path.join(tmp, "rules"), "--rules", rules], build)
    check(p.returncode == 2 and f"{rules}:3" in p.stderr and "=>" in p.stderr and p.stderr.strip().count("\n") == 0,
          f"a bad rules line: exit 2 naming it ({p.returncode}: {p.stderr.strip()})")
    with open(rules, "w") as f:
        f.write("cv_pct >= 50   # noisy rows\n")
    p = run([main_json, "--out", os.path.join(tmp, "rules"), "--rules", rules], build)
    check(p.returncode == 0 and "regression: all_reduce rhd 32K: cv_pct 60.0 >= 50" in p.stdout,
          "a cv_pct rule applies without a baseline")

    # 3. The clean document: the fit recovers the known terms; the tuning file reads back as the fit.
    clean_json = write(os.path.join(tmp, "clean.json"), make_doc(slow_host=False, seed=3))
    out = os.path.join(tmp, "clean")
    p = run([clean_json, "--out", out, "--tuning-only"], build)
    tuning = os.path.join(out, "weft.tuning")
    check(p.returncode == 0 and p.stdout.strip().splitlines()[-1] == tuning,
          f"--tuning-only prints the file's path ({p.returncode}: {p.stdout.strip()} {p.stderr.strip()})")
    check(sorted(os.listdir(out)) == ["weft.tuning"], f"--tuning-only writes the tuning file only: {os.listdir(out)}")
    p = run([clean_json, "--out", out], build)
    check(p.returncode == 0, f"clean document: exit 0 ({p.stderr.strip()})")
    with open(os.path.join(out, "analysis.json")) as f:
        analysis = json.load(f)
    fits = {f["class"]: f for f in analysis["fits"]}
    for cls, (alpha, bw) in (("same_numa", INTRA), ("across_hosts", ACROSS)):
        fa, fb = fits[cls]["alpha_us"], fits[cls]["bandwidth_GBps"]
        check(abs(fa - alpha) / alpha < 0.10 and abs(fb - bw) / bw < 0.10,
              f"{cls}: fitted {fa:.4g} us, {fb:.4g} GB/s against {alpha} us, {bw} GB/s (within 10%)")
    check(not analysis["outliers"] or all(o["kind"] == "rank" or o["kind"] == "spread" for o in analysis["outliers"]),
          "no pair or host outliers on the clean document")
    with open(tuning) as f:
        text = f.read()
    check(re.search(r"^# .*same_numa \(30 points, 6 directions\)", text, re.M) is not None,
          "the Memory directive's comment names its class and points")
    env = dict(os.environ, WEFT_TUNING_FILE=tuning)
    env.pop("WEFT_ALGO", None)
    env.pop("NCCL_ALGO", None)
    info = subprocess.run([os.path.join(build, "tools", "weft-info"), "plan", "allreduce", "1M", "--ranks", "6",
                           "--ranks-per-node", "2"], capture_output=True, text=True, env=env, timeout=60)
    m = re.search(r"^# links: intra-node ([0-9.e+]+) GB/s ([0-9.e+]+) us; NIC ([0-9.e+]+) GB/s ([0-9.e+]+) us x (\d+)",
                  info.stdout, re.M)
    check(info.returncode == 0 and m is not None, f"weft-info reads the tuning file ({info.stderr.strip()})")
    if m:
        got = [float(v) for v in m.groups()]
        want = [fits["same_numa"]["bandwidth_GBps"], fits["same_numa"]["alpha_us"],
                fits["across_hosts"]["bandwidth_GBps"], fits["across_hosts"]["alpha_us"], 1]
        check(all(math.isclose(g, w, rel_tol=6e-3) for g, w in zip(got, want)),
              f"'# links:' shows the fit: {m.group(0)} against {want}")

    # 4. An interrupted run: hosts only. The report says what is missing; the tuning file is comments.
    doc = make_doc(slow_host=False, complete=False)
    for key in ("p2p", "sweep", "selection", "tuning_file"):
        del doc[key]
    out = os.path.join(tmp, "interrupted")
    p = run([write(os.path.join(tmp, "interrupted.json"), doc), "--out", out], build)
    check(p.returncode == 0, f"interrupted document: exit 0 ({p.stderr.strip()})")
    if p.returncode == 0:
        with open(os.path.join(out, "report.md")) as f:
            report = f.read()
        check("stopped by interrupt" in report and "point-to-point matrix" in report and "collective sweep" in report,
              "the interrupted run's report says what stopped it and what is missing")

    # 5. Bad input: one line naming the problem, exit 2.
    bad = os.path.join(tmp, "bad.json")
    doc = make_doc(slow_host=False)
    del doc["p2p"]["pairs"][3]["from"]
    p = run([write(bad, doc), "--out", os.path.join(tmp, "bad")], build)
    check(p.returncode == 2 and "p2p.pairs[3]: 'from' missing" in p.stderr and p.stderr.strip().count("\n") == 0,
          f"a pair without 'from': exit 2 naming it ({p.returncode}: {p.stderr.strip()})")

    if failures:
        print(f"\n{len(failures)} FAILED (files in {tmp})")
        return 1
    subprocess.run(["rm", "-r", tmp])
    print("\nall checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
