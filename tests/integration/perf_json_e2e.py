#!/usr/bin/python3
"""End to end: the perf tools' -J documents, from real 2-rank runs under weftrun.

Checks that
  - weft's documents and nccl-tests' own (the fixture its writer produced) validate against
    perf/nccl_tests_json.schema.json, and have the same key paths (parsers written for
    nccl-tests find every key they look for);
  - the numbers agree with themselves and with the text output: times_us is the per-iteration
    maximum of the per-process rows, the statistics are those of times_us, bus_bw is alg_bw
    times the collective's factor, each row's size, time and #wrong match the printed table;
  - a secret in the environment never reaches the file, an existing file is never replaced,
    and a -J path rank 0 cannot create stops every rank with a message naming it.
"""
import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile

import jsonschema


def key_paths(value, prefix=""):
    """Every key path of a document ("results[].out_of_place.time"), lists flattened."""
    paths = set()
    if isinstance(value, dict):
        for k, v in value.items():
            paths.add(prefix + k)
            paths |= key_paths(v, prefix + k + ".")
    elif isinstance(value, list):
        for item in value:
            paths |= key_paths(item, prefix.rstrip(".") + "[].")
    return paths


def run(cmd, env, timeout=240):
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


def table_rows(stdout):
    """The printed rows of rank 0: size -> [oop time, oop #wrong, ip time, ip #wrong]."""
    rows = {}
    for line in stdout.splitlines():
        line = re.sub(r"^\[0\] ", "", line)
        if line.startswith("#") or not line.strip():
            continue
        fields = line.split()
        if len(fields) < 13 or not fields[0].isdigit():
            continue
        per_placement = (len(fields) - 5) // 2
        oop, ip = fields[5:5 + per_placement], fields[5 + per_placement:]
        rows[int(fields[0])] = [float(oop[0]), oop[3], float(ip[0]), ip[3]]
    return rows


def check_document(doc, stdout, bus_factor, nranks, failures, name):
    printed = table_rows(stdout)
    if len(printed) != len(doc["results"]):
        failures.append(f"{name}: {len(doc['results'])} results in the file, {len(printed)} rows printed")
    for r in doc["results"]:
        for placement, column in (("out_of_place", 0), ("in_place", 2)):
            p = r[placement]
            expect_bus = p["alg_bw"] * bus_factor
            if not math.isclose(p["bus_bw"], expect_bus, rel_tol=1e-3, abs_tol=2e-6):
                failures.append(f"{name} {r['size']} {placement}: bus_bw {p['bus_bw']} != alg_bw x factor {expect_bus}")
            row = printed.get(r["size"])
            if row is None:
                failures.append(f"{name}: size {r['size']} not printed")
                continue
            if not math.isclose(p["time"], row[column], rel_tol=6e-3, abs_tol=0.006):
                failures.append(f"{name} {r['size']} {placement}: time {p['time']} but printed {row[column]}")
            wrong_text = row[column + 1]
            if (p["nwrong"] is None) != (wrong_text == "N/A") or (p["nwrong"] is not None and p["nwrong"] != float(wrong_text)):
                failures.append(f"{name} {r['size']} {placement}: nwrong {p['nwrong']} but printed {wrong_text}")
            per_iter = r.get(placement + "_per_iter")
            if per_iter is None:
                continue
            rows = per_iter["per_process_max_times_us"]
            if len(rows) != nranks:
                failures.append(f"{name}: {len(rows)} process rows for {nranks} ranks")
            slowest = [max(col) for col in zip(*rows)]
            if any(not math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-5) for a, b in zip(slowest, per_iter["times_us"])):
                failures.append(f"{name} {r['size']} {placement}: times_us is not the max over process rows")
            kept = per_iter["times_us"][per_iter["skipped_iterations"]:]
            expect = {"min_us": min(kept), "max_us": max(kept), "avg_us": statistics.fmean(kept),
                      "stdev_us": statistics.pstdev(kept), "p50_us": sorted(kept)[len(kept) // 2]}
            for key, value in expect.items():
                if not math.isclose(per_iter[key], value, rel_tol=1e-5, abs_tol=1e-5):
                    failures.append(f"{name} {r['size']} {placement}: {key} {per_iter[key]} != {value}")
            # The reported time (-a 1: the ranks' average) is each rank's loop time over the timed
            # calls, the skipped first one included: never below that rank's mean over its own
            # iterations (each timed inside the loop). Not the per-iteration maxima over ranks: with
            # ranks sharing cores they take turns waiting for each other, and every iteration's
            # slowest rank is then slower than either rank's mean. No upper bound: a rank
            # descheduled between two iterations adds that time to its loop and to no iteration.
            own_means = statistics.fmean(statistics.fmean(row) for row in rows)
            if p["time"] < own_means * (1 - 1e-3) - 0.01:
                failures.append(f"{name} {r['size']} {placement}: time {p['time']} below the ranks' mean "
                                f"iteration {own_means:.3f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--weftrun", required=True)
    parser.add_argument("--tools", required=True, help="folder of the perf tools")
    parser.add_argument("--schema", required=True)
    parser.add_argument("--fixture", required=True)
    args = parser.parse_args()

    schema = json.load(open(args.schema))
    jsonschema.Draft7Validator.check_schema(schema)
    reference = json.load(open(args.fixture))
    jsonschema.validate(reference, schema)
    failures = []
    env = dict(os.environ, WEFT_PERF_TEST_SECRET_TOKEN="hunter2-do-not-write")
    with tempfile.TemporaryDirectory(prefix="weft_perf_json_") as tmp:
        out = os.path.join(tmp, "all_reduce.json")
        open(out, "w").write("an earlier run's file\n")  # must survive: the new one goes to .0
        cmd = [args.weftrun, "-n", "2", "--timeout", "200", os.path.join(args.tools, "all_reduce_perf"),
               "-b", "8", "-e", "256K", "-f", "8", "-n", "6", "-w", "1", "-c", "1", "-I", "1", "-K", "1", "-J", out]
        result = run(cmd, env)
        print(result.stdout, result.stderr)
        if result.returncode != 0:
            return f"all_reduce_perf failed ({result.returncode})"
        if open(out).read() != "an earlier run's file\n":
            failures.append("-J replaced an existing file")
        written = out + ".0"
        if f"# Writing JSON output to {written}" not in result.stdout:
            failures.append("no '# Writing JSON output to' line naming " + written)
        text = open(written).read()
        if "hunter2" in text or "WEFT_PERF_TEST_SECRET_TOKEN=<redacted>" not in text:
            failures.append("the secret reached the file, or its entry is missing")
        doc = json.loads(text)
        jsonschema.validate(doc, schema)
        missing = key_paths(reference) - key_paths(doc)
        extra = key_paths(doc) - key_paths(reference)
        if missing or extra:
            failures.append(f"key paths differ from nccl-tests': missing {sorted(missing)}, extra {sorted(extra)}")
        if [d["rank"] for d in doc["config"]["devices"]] != [0, 1]:
            failures.append("devices are not ranks 0 and 1")
        if doc["config"]["per_iter_skip"] != 1 or doc["out_of_bounds"]["count"] != 0:
            failures.append("config or out_of_bounds wrong")
        check_document(doc, result.stdout, 2 * (2 - 1) / 2, 2, failures, "all_reduce")

        # alltoall: in place is not checked (nwrong null, N/A printed); no -I.
        out = os.path.join(tmp, "alltoall.json")
        result = run([args.weftrun, "-n", "2", "--timeout", "200", os.path.join(args.tools, "alltoall_perf"),
                      "-b", "1K", "-e", "64K", "-f", "8", "-n", "3", "-w", "1", "-c", "1", "-J", out], env)
        print(result.stdout, result.stderr)
        if result.returncode != 0:
            return f"alltoall_perf failed ({result.returncode})"
        doc = json.load(open(out))
        jsonschema.validate(doc, schema)
        if any("out_of_place_per_iter" in r for r in doc["results"]):
            failures.append("per-iteration objects without -I")
        if any(r["in_place"]["nwrong"] is not None for r in doc["results"]):
            failures.append("alltoall's unchecked in-place nwrong is not null")
        check_document(doc, result.stdout, (2 - 1) / 2, 2, failures, "alltoall")

        # A path rank 0 cannot create: every rank stops, the message names the path.
        bad = os.path.join(tmp, "missing", "x.json")
        result = run([args.weftrun, "-n", "2", "--timeout", "60", os.path.join(args.tools, "all_reduce_perf"),
                      "-b", "8", "-e", "8", "-J", bad], env, timeout=90)
        if result.returncode == 0 or f"cannot create {bad}" not in result.stderr:
            failures.append(f"an uncreatable -J path: exit {result.returncode}, stderr {result.stderr[-400:]}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
