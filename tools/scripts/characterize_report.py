#!/usr/bin/env python3
"""Turn weft-characterize's JSON into the analysis, the report, the plots and the tuning file.

Usage: characterize_report.py JSON --out DIR --weft-info PATH [--tuning-only] [--baseline FILE]
                              [--rules FILE] [--cv-threshold PCT]

Writes into DIR:
  weft.tuning    the cost model's link terms fitted per link class, in WEFT_TUNING_FILE's format,
                 checked by reading it back with `weft-info plan` (its "# links:" line);
                 --tuning-only stops here and prints the file's path
  analysis.json  fits, predictions, crossovers, outliers, regressions
  report.md, report.html (self-contained: the plots are embedded as data URIs)
  busbw_<collective>.png, p2p_bandwidth.png, p2p_latency.png, predicted_vs_measured.png,
  outliers.png
Exit status: 0 (outliers and regressions do not change it); 2 on bad input, with one line naming
the problem; 1 when the tuning file does not read back.

Fit. Per link class, the (size, one-way time) points of every pair of that class, fitted to
t = alpha + S/B by perf/fit_link_model.py's fit (least squares weighted 1/t^2). Directives
(algorithms/cost/cost_model.cc, runtime/comm/communicator.cc):
  - The runtime prices every rank as a host-memory rank (IntraNodeMedium::Memory): the
    intra-node hop is the Memory class at half its bandwidth (copied into a shared-memory slot,
    then out of it), one figure for every pair of a node whatever their NUMA nodes or sockets.
    So same_numa, same_socket, across_sockets and same_host all feed `link Memory`: latency the
    largest alpha and bandwidth 2 x the smallest B of those classes (a ring step waits for its
    slowest hop). InterSocket and PCIe/NVLink are not written: the cost model never prices
    InterSocket (only the affinity code reads it), and host-memory ranks do not use the others.
  - across_hosts feeds `link Network`: the cost model's NIC term is one flow through one NIC
    (each ring channel crosses through its own NIC; a node's ranks share nics_per_node NICs), which
    is what one pair measures alone. `nics_per_node` is the fewest NICs any host lists (at least
    1): the runtime's default from the same topology, written so that weft-info (which assumes
    one NIC without --topo) prices as the runtime does.

Outlier rules (defaults):
  pair    bandwidth (the lower of its two directions) below 0.5 x the class's reference, the 75th
          percentile of the class's pair bandwidths, or latency (the higher direction) above
          2 x the 25th percentile of its latencies. Percentiles by nearest rank, not the median:
          with 3 hosts and one slow host, 2 of 3 host pairs are slow.
  host    >= 75% of a host's pairs in a class are outliers while the class has pairs that are not.
  rank    mean time (rank_avg_us) above 1.25 x the median rank's in >= 75% of the sweep rows
          that have >= 2 ranks.
  spread  a sweep row whose iter_us.cv_pct exceeds --cv-threshold (default 25) and whose
          iter_us.stdev is at least --spread-floor-us (default 5): a microsecond call that a
          scheduler tick doubles is the VM's noise, not the link's.
  wrong   a sweep row with wrong elements.
Regressions against --baseline FILE (an earlier run's JSON), default rules:
  busbw_drop_pct > 10           per (collective, algorithm, size)
  p2p_bandwidth_drop_pct > 10   per direction (from, to)
  p2p_latency_rise_pct > 20     per direction
--rules FILE: one rule a line, `METRIC OP THRESHOLD`, `#` comments; metrics busbw_drop_pct,
time_rise_pct, p2p_bandwidth_drop_pct, p2p_latency_rise_pct, cv_pct (of this run's rows, no
baseline needed); ops > >= < <=. A metric the file names replaces that metric's default rule.
A host is named defective, as SuperBench does, when >= 75% of its pair directions of a class
that have a baseline violate a rule.
"""
import argparse
import base64
import html
import json
import math
import os
import re
import statistics
import subprocess
import sys
from collections import Counter, defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "perf"))
from fit_link_model import fit  # noqa: E402  (the one fit of the link terms; not copied)

PROG = "characterize_report.py"
INTRA_CLASSES = ("same_numa", "same_socket", "across_sockets", "same_host")
CLASS_ORDER = INTRA_CLASSES + ("across_hosts",)
# nccl-tests' names -> weft-info's (weft-info ignores '_' too; explicit, so an unknown name is caught).
WEFT_COLLECTIVES = {"all_reduce": "allreduce", "all_gather": "allgather", "reduce_scatter": "reducescatter",
                    "broadcast": "broadcast", "reduce": "reduce", "alltoall": "alltoall", "gather": "gather",
                    "scatter": "scatter"}
MAX_PLAN_CALLS = 280  # weft-info subprocesses per run (each ~3 ms, but keep the count bounded)
PAIR_BANDWIDTH_FACTOR, PAIR_LATENCY_FACTOR = 0.5, 2.0
BANDWIDTH_PERCENTILE, LATENCY_PERCENTILE = 0.75, 0.25
HOST_SHARE = 0.75
RANK_SLOW_FACTOR, RANK_SLOW_SHARE = 1.25, 0.75
TUNED_SLOWER = 1.05
METRICS = ("busbw_drop_pct", "time_rise_pct", "p2p_bandwidth_drop_pct", "p2p_latency_rise_pct", "cv_pct")
OPS = {">": lambda a, b: a > b, ">=": lambda a, b: a >= b, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b}
DEFAULT_RULES = [("busbw_drop_pct", ">", 10.0), ("p2p_bandwidth_drop_pct", ">", 10.0),
                 ("p2p_latency_rise_pct", ">", 20.0)]


class InputError(Exception):
    """Bad input: exit 2 with this one line."""


# ------------------------------------------------------------------------------ reading the JSON

def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def need(obj, key, check, what, where, default=None, required=True):
    if key not in obj or obj[key] is None:
        if required:
            raise InputError(f"{where}: '{key}' missing")
        return default
    if not check(obj[key]):
        raise InputError(f"{where}: '{key}' is not {what}")
    return obj[key]


def number(obj, key, where, required=True, default=None):
    return need(obj, key, is_number, "a number", where, default, required)


def integer(obj, key, where, required=True, default=None):
    return need(obj, key, lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer", where, default,
                required)


def text(obj, key, where, required=True, default=""):
    return need(obj, key, lambda v: isinstance(v, str), "a string", where, default, required)


def array(doc, key, where):
    """A section that an interrupted run may have left out: [] when missing."""
    value = doc.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError(f"{where}: '{key}' is not a list")
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise InputError(f"{where}: {key}[{i}] is not an object")
    return value


class Host:
    def __init__(self, key, name):
        self.key, self.name, self.label = key, name, name
        self.ranks = []
        self.info = {}


class Pair:
    """One direction (from -> to) of the point-to-point matrix."""

    def __init__(self, frm, to, cls, latency, times, bandwidth):
        self.frm, self.to, self.cls = frm, to, cls
        self.latency, self.times, self.bandwidth = latency, times, bandwidth


class Run:
    """A weft-characterize document, checked and normalized."""

    def __init__(self, path):
        self.path = path
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except OSError as e:
            raise InputError(f"{path}: {e.strerror}")
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise InputError(f"{path}: not JSON ({e})")
        if not isinstance(doc, dict):
            raise InputError(f"{path}: not a JSON object")
        if doc.get("tool", "weft-characterize") != "weft-characterize":
            raise InputError(f"{path}: written by {doc.get('tool')!r}, not weft-characterize")
        if doc.get("format") != 1:
            raise InputError(f"{path}: format {doc.get('format')!r}, expected 1")
        self.doc = doc
        self.present = {key: key in doc and doc[key] is not None for key in
                        ("ranks", "hosts", "p2p", "sweep", "selection", "tuning_file")}
        self.complete = doc.get("complete") is True
        self.stopped_by = doc.get("stopped_by") or ""
        self.skipped = [(str(s.get("what", "")), str(s.get("why", ""))) for s in array(doc, "skipped", path)]
        self._read_ranks_and_hosts()
        self._read_p2p()
        self._read_sweep()
        self._read_selection()
        self.tuning_file = doc.get("tuning_file") if isinstance(doc.get("tuning_file"), str) else None

    def _read_ranks_and_hosts(self):
        path = self.path
        nranks = integer(self.doc, "nranks", path, required=False)
        self.host_of = {}  # rank -> host key
        hosts = {}
        for i, r in enumerate(array(self.doc, "ranks", path)):
            where = f"{path}: ranks[{i}]"
            rank = integer(r, "rank", where)
            name = text(r, "host", where)
            key = text(r, "host_id", where, required=False, default="") or name
            self.host_of[rank] = key
            hosts.setdefault(key, Host(key, name)).ranks.append(rank)
        for i, h in enumerate(array(self.doc, "hosts", path)):
            where = f"{path}: hosts[{i}]"
            name = text(h, "host", where)
            key = text(h, "host_id", where, required=False, default="") or name
            host = hosts.setdefault(key, Host(key, name))
            ranks = need(h, "ranks", lambda v: isinstance(v, list) and all(isinstance(x, int) for x in v),
                         "a list of ranks", where, default=[], required=False)
            for rank in ranks:
                if rank not in self.host_of:
                    self.host_of[rank] = key
                    host.ranks.append(rank)
            host.info = h
        self.hosts = list(hosts.values())
        for host in self.hosts:
            host.ranks.sort()
        # Hosts are named by their name unless two share it (network namespaces): then by id.
        names = Counter(h.name for h in self.hosts)
        for host in self.hosts:
            if names[host.name] > 1:
                host.label = host.key
        self.label = {h.key: h.label for h in self.hosts}
        known = max(self.host_of) + 1 if self.host_of else 0
        self.nranks = nranks if nranks else known

    def _read_p2p(self):
        path = self.path
        p2p = self.doc.get("p2p") or {}
        if not isinstance(p2p, dict):
            raise InputError(f"{path}: 'p2p' is not an object")
        sizes = p2p.get("sizes") or []
        self.pairs = []
        for i, p in enumerate(array(p2p, "pairs", f"{path}: p2p")):
            where = f"{path}: p2p.pairs[{i}]"
            frm, to = integer(p, "from", where), integer(p, "to", where)
            if frm == to or min(frm, to) < 0 or (self.nranks and max(frm, to) >= self.nranks):
                raise InputError(f"{where}: pair {frm} -> {to} is not two of the {self.nranks} ranks")
            cls = text(p, "class", where)
            raw = p.get("times_us") or {}
            times = {}
            if isinstance(raw, dict):
                for size, t in raw.items():
                    if not re.fullmatch(r"\d+", str(size)) or not is_number(t):
                        raise InputError(f"{where}: times_us entry {size!r}: {t!r} is not size: microseconds")
                    times[int(size)] = float(t)
            elif isinstance(raw, list) and len(raw) == len(sizes):
                times = {int(s): float(t) for s, t in zip(sizes, raw) if is_number(t)}
            else:
                raise InputError(f"{where}: 'times_us' is not an object of size: microseconds")
            latency = number(p, "latency_us", where, required=False)
            if latency is None and times:
                latency = times[min(times)]
            bandwidth = number(p, "bandwidth_GBps", where, required=False)
            if bandwidth is None and times and times[max(times)] > 0:
                bandwidth = max(times) / (times[max(times)] * 1e3)
            self.pairs.append(Pair(frm, to, cls, latency, times, bandwidth))
        self.nranks = max([self.nranks] + [max(p.frm, p.to) + 1 for p in self.pairs])

    def _read_sweep(self):
        self.sweep = []
        for i, r in enumerate(array(self.doc, "sweep", self.path)):
            where = f"{self.path}: sweep[{i}]"
            algorithm = text(r, "algorithm", where)
            iter_us = r.get("iter_us") if isinstance(r.get("iter_us"), dict) else {}
            ranks = r.get("rank_avg_us") if isinstance(r.get("rank_avg_us"), list) else []
            self.sweep.append({
                "collective": text(r, "collective", where), "algorithm": algorithm,
                "ran": text(r, "ran", where, required=False, default="") or algorithm,
                "size": integer(r, "size", where), "time_us": float(number(r, "time_us", where)),
                "busbw_GBps": float(number(r, "busbw_GBps", where, required=False, default=0.0)),
                "wrong": integer(r, "wrong", where, required=False, default=0),
                "cv_pct": float(iter_us["cv_pct"]) if is_number(iter_us.get("cv_pct")) else None,
                "stdev_us": float(iter_us["stdev"]) if is_number(iter_us.get("stdev")) else None,
                "rank_avg_us": [float(v) if is_number(v) else 0.0 for v in ranks]})

    def _read_selection(self):
        self.selection = []
        for i, r in enumerate(array(self.doc, "selection", self.path)):
            where = f"{self.path}: selection[{i}]"
            self.selection.append({
                "collective": text(r, "collective", where), "size": integer(r, "size", where),
                "default_algorithm": text(r, "default_algorithm", where),
                "default_us": float(number(r, "default_us", where)),
                "tuned_algorithm": text(r, "tuned_algorithm", where), "tuned_us": float(number(r, "tuned_us", where))})

    def host_label(self, rank):
        key = self.host_of.get(rank)
        return self.label.get(key, "?") if key is not None else "?"

    def collectives(self):
        seen = []
        for r in self.sweep:
            if r["collective"] not in seen:
                seen.append(r["collective"])
        return seen

    def missing(self):
        """What the report cannot show, one phrase each."""
        out = []
        if not self.hosts:
            out.append("hosts and ranks (no placement: classes and layout unknown)")
        if not self.pairs:
            out.append("point-to-point matrix (no fits, no tuning terms)")
        if not self.sweep:
            out.append("collective sweep")
        if not self.selection:
            out.append("selection (default against tuned)" + ("" if self.present["selection"] else ": not run"))
        return out


# ------------------------------------------------------------------------------ small helpers

def human(size):
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale}{unit}"
    return str(size)


def g3(v):
    return "-" if v is None else f"{v:.3g}"


def nearest_rank(values, p):
    """The p-th percentile by nearest rank: always one of the values."""
    s = sorted(values)
    return s[max(1, math.ceil(p * len(s))) - 1]


def median(values):
    return statistics.median(values) if values else None


# ------------------------------------------------------------------------------ fits and the tuning file

def fit_classes(run):
    by_class = defaultdict(list)
    for p in run.pairs:
        by_class[p.cls].append(p)
    fits = []
    for cls in sorted(by_class, key=lambda c: (CLASS_ORDER.index(c) if c in CLASS_ORDER else 99, c)):
        pairs = by_class[cls]
        points = sorted((s, t) for p in pairs for s, t in p.times.items() if t > 0)
        entry = {"class": cls, "directions": len(pairs), "points": len(points), "alpha_us": None,
                 "bandwidth_GBps": None, "notes": []}
        fits.append(entry)
        if len({s for s, _ in points}) < 2:
            entry["notes"].append("fewer than two sizes: nothing to fit")
            continue
        c, k = fit(points)
        if k > 0:
            entry["bandwidth_GBps"] = 1.0 / (k * 1e3)  # S in bytes, t in us
        else:
            entry["notes"].append("time does not grow with size: no bandwidth")
        if c > 0:
            entry["alpha_us"] = c
        else:
            # The intercept is noise around zero; the measured 8 B half round trip is the latency.
            entry["alpha_us"] = median([p.latency for p in pairs if p.latency]) or None
            entry["notes"].append(f"fitted intercept {c:.3g} us not positive: latency is the median 8 B latency")
        worst = max(abs(c + k * s - t) / t for s, t in points)
        entry["max_residual_pct"] = 100 * worst
    return fits


def tuning_directives(run, fits):
    """(text of the tuning file, directives for analysis.json)."""
    source = os.path.basename(run.path)
    lines = [f"# written by tools/scripts/characterize_report.py from {source}"
             f" (weft {run.doc.get('weft_version', '?')}, {run.doc.get('start_time', '?')})"]
    directives = []
    intra = [f for f in fits if f["class"] in INTRA_CLASSES]
    with_bw = [f for f in intra if f["bandwidth_GBps"]]
    with_lat = [f for f in intra if f["alpha_us"]]
    if with_bw or with_lat:
        words = ["link", "Memory"]
        parts = []
        d = {"directive": "Memory"}
        if with_lat:
            f = max(with_lat, key=lambda x: x["alpha_us"])
            words += ["latency_us", f"{f['alpha_us']:.6g}"]
            d["latency_us"] = float(f"{f['alpha_us']:.6g}")
            parts.append(f"latency {f['alpha_us']:.3g} us from {f['class']} ({f['points']} points, "
                         f"{f['directions']} directions)")
        if with_bw:
            f = min(with_bw, key=lambda x: x["bandwidth_GBps"])
            words += ["bandwidth_GBps", f"{2 * f['bandwidth_GBps']:.6g}"]
            d["bandwidth_GBps"] = float(f"{2 * f['bandwidth_GBps']:.6g}")
            d["intra_node_GBps"] = f["bandwidth_GBps"]
            parts.append(f"bandwidth 2 x {f['bandwidth_GBps']:.3g} GB/s from {f['class']} ({f['points']} points, "
                         f"{f['directions']} directions)")
        lines.append("# intra-node hop of host-memory ranks = Memory at half its bandwidth (copied in, then out); "
                     "slowest intra-node class: " + "; ".join(parts))
        lines.append(" ".join(words))
        directives.append(d)
    network = next((f for f in fits if f["class"] == "across_hosts"), None)
    if network and (network["alpha_us"] or network["bandwidth_GBps"]):
        words = ["link", "Network"]
        d = {"directive": "Network"}
        if network["alpha_us"]:
            words += ["latency_us", f"{network['alpha_us']:.6g}"]
            d["latency_us"] = float(f"{network['alpha_us']:.6g}")
        if network["bandwidth_GBps"]:
            words += ["bandwidth_GBps", f"{network['bandwidth_GBps']:.6g}"]
            d["bandwidth_GBps"] = float(f"{network['bandwidth_GBps']:.6g}")
        lines.append(f"# one flow through one NIC: across_hosts ({network['points']} points, "
                     f"{network['directions']} directions, measured one pair at a time)")
        lines.append(" ".join(words))
        directives.append(d)
        counts = [len(h.info["nics"]) for h in run.hosts if isinstance(h.info.get("nics"), list)]
        if counts and len(counts) == len(run.hosts):
            nics = max(1, min(counts))
            lines.append(f"# the fewest NICs a host lists ({len(counts)} hosts), the runtime's default too; "
                         "weft-info without --topo assumes 1")
            lines.append(f"nics_per_node {nics}")
            directives.append({"directive": "nics_per_node", "value": nics})
    if not directives:
        lines.append("# no point-to-point measurements to fit: the default terms apply")
    return "\n".join(lines) + "\n", directives


def layout_of(run):
    """(N, L, notes): what `weft-info plan --ranks N --ranks-per-node L` can say of the hosts."""
    n = max(1, run.nranks)
    counts = [len(h.ranks) for h in run.hosts if h.ranks]
    if not counts:
        return n, n, ["no host information: priced as one node"]
    per_node = max(counts)
    notes = []
    if len(set(counts)) > 1:
        notes.append(f"hosts hold {', '.join(str(c) for c in counts)} ranks; weft-info takes one ranks-per-node: "
                     f"priced as nodes of {per_node} (the last one smaller)")
    if sum(counts) != n:
        notes.append(f"hosts list {sum(counts)} of {n} ranks")
    order = [r for h in sorted(run.hosts, key=lambda h: min(h.ranks or [0])) for r in h.ranks]
    if order != sorted(order):
        notes.append("ranks are not numbered host by host; weft-info prices node-major numbering")
    return n, per_node, notes


class Planner:
    """weft-info plan, cached, with a bounded number of calls."""

    def __init__(self, weft_info, nranks, per_node, tuning):
        self.weft_info, self.nranks, self.per_node, self.tuning = weft_info, nranks, per_node, tuning
        self.cache, self.calls, self.errors = {}, 0, []

    def plan(self, collective, size, tuned, direct=False):
        key = (collective, size, tuned, direct)
        if key in self.cache:
            return self.cache[key]
        if self.calls >= MAX_PLAN_CALLS:
            return None
        env = dict(os.environ)
        for name in ("WEFT_ALGO", "NCCL_ALGO", "WEFT_TUNING_FILE"):
            env.pop(name, None)
        if tuned:
            env["WEFT_TUNING_FILE"] = self.tuning
        cmd = [self.weft_info, "plan", WEFT_COLLECTIVES.get(collective, collective), str(size),
               "--ranks", str(self.nranks), "--ranks-per-node", str(self.per_node)] + (["--direct"] if direct else [])
        self.calls += 1
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)
            out, rc, err = proc.stdout, proc.returncode, proc.stderr.strip()
        except (OSError, subprocess.TimeoutExpired) as e:
            out, rc, err = "", -1, str(e)
        if rc != 0:
            result = {"error": f"{' '.join(cmd[1:])}: exit {rc}: {err.splitlines()[-1] if err else ''}"}
            self.errors.append(result["error"])
        else:
            result = parse_plan(out)
        self.cache[key] = result
        return result


def parse_plan(out):
    algos, chosen, links, in_table = {}, None, None, False
    for line in out.splitlines():
        if line.startswith("# links: "):
            links = line[len("# links: "):]
        elif line.startswith("algo "):
            in_table = True
        elif line.startswith("chosen: "):
            chosen, in_table = line.split()[1], False
        elif in_table:
            w = line.split()
            if len(w) >= 3 and w[0] != "bound":
                algos[w[0]] = float(w[1]) if w[1] != "-" else None
    return {"algos": algos, "chosen": chosen, "links": links}


LINKS_RE = re.compile(r"intra-node ([0-9.e+-]+) GB/s ([0-9.e+-]+) us; NIC ([0-9.e+-]+) GB/s ([0-9.e+-]+) us "
                      r"x (\d+) per node")


def check_read_back(planner, directives):
    """The tuning file through weft-info: (ok, links line, problem)."""
    result = planner.plan("all_reduce", 1 << 20, True)
    if result is None or "error" in result:
        return False, "", result["error"] if result else "no weft-info call left"
    links = result.get("links") or ""
    m = LINKS_RE.search(links)
    if not m:
        return False, links, f"weft-info printed no '# links:' line I can read ({links!r})"
    intra_bw, intra_lat, nic_bw, nic_lat, nics = (float(m.group(i)) for i in range(1, 6))
    expect = []
    for d in directives:
        if d["directive"] == "Memory":
            if "bandwidth_GBps" in d:
                expect.append(("intra-node GB/s", intra_bw, d["bandwidth_GBps"] / 2))
            if "latency_us" in d:
                expect.append(("intra-node us", intra_lat, d["latency_us"]))
        elif d["directive"] == "Network":
            if "bandwidth_GBps" in d:
                expect.append(("NIC GB/s", nic_bw, d["bandwidth_GBps"]))
            if "latency_us" in d:
                expect.append(("NIC us", nic_lat, d["latency_us"]))
        elif d["directive"] == "nics_per_node":
            expect.append(("NICs per node", nics, d["value"]))
    for name, got, want in expect:
        # weft-info prints three significant digits.
        if not math.isclose(got, want, rel_tol=6e-3):
            return False, links, f"{name}: weft-info read {got:g}, the file says {want:.6g}"
    return True, links, ""


# ------------------------------------------------------------------------------ predictions and crossovers

def thin_keys(keys, budget):
    """At most `budget` (collective, size) keys: evenly spaced sizes of every collective, ends kept."""
    if len(keys) <= budget:
        return keys, False
    by_coll = defaultdict(list)
    for c, s in keys:
        by_coll[c].append(s)
    per = max(2, budget // max(1, len(by_coll)))
    kept = []
    for c, sizes in by_coll.items():
        sizes = sorted(sizes)
        if len(sizes) <= per:
            idx = range(len(sizes))
        else:
            idx = sorted({round(i * (len(sizes) - 1) / (per - 1)) for i in range(per)})
        kept += [(c, sizes[i]) for i in idx]
    return sorted(kept), True


def valid_row(r):
    return r["ran"] == r["algorithm"] and r["wrong"] == 0 and r["time_us"] > 0


def predict(run, planner, tuned):
    keys = sorted({(r["collective"], r["size"]) for r in run.sweep if r["collective"] in WEFT_COLLECTIVES})
    unknown = sorted({r["collective"] for r in run.sweep if r["collective"] not in WEFT_COLLECTIVES})
    direct = {r["collective"] for r in run.sweep if r["ran"] == "direct"}  # buffers were mapped
    models = 2 if tuned else 1
    keys, thinned = thin_keys(keys, (MAX_PLAN_CALLS - planner.calls - 1) // models)
    plans = {}
    for c, s in keys:
        plans[(c, s)] = {"tuned": planner.plan(c, s, True, c in direct) if tuned else None,
                         "default": planner.plan(c, s, False, c in direct)}
    rows = []
    for r in run.sweep:
        p = plans.get((r["collective"], r["size"]))
        if not p or not valid_row(r):
            continue

        def time_of(plan):
            return (plan or {}).get("algos", {}).get(r["algorithm"])
        t, d = time_of(p["tuned"]), time_of(p["default"])
        rows.append({"collective": r["collective"], "size": r["size"], "algorithm": r["algorithm"],
                     "measured_us": r["time_us"], "tuned_us": t, "default_us": d,
                     "tuned_ratio": t / r["time_us"] if t else None,
                     "default_ratio": d / r["time_us"] if d else None})
    notes = []
    if thinned:
        notes.append(f"predicted for {len(keys)} (collective, size) pairs, evenly spaced, to keep weft-info calls "
                     f"under {MAX_PLAN_CALLS}")
    if unknown:
        notes.append("no model for: " + ", ".join(unknown))
    return plans, rows, notes


def changes(seq):
    """[(size, name)] -> the points where name changes."""
    out = []
    for (s0, a), (s1, b) in zip(seq, seq[1:]):
        if a != b:
            out.append({"from": a, "to": b, "between": [s0, s1]})
    return out


def crossovers(run, plans):
    result = {}
    for coll in run.collectives():
        per_size = defaultdict(list)
        for r in run.sweep:
            if r["collective"] == coll and valid_row(r):
                per_size[r["size"]].append(r)
        sizes = sorted(per_size)
        fastest = [(s, min(per_size[s], key=lambda r: r["time_us"])["algorithm"]) for s in sizes]

        def chosen(model):
            seq = []
            for s in sizes:
                p = (plans.get((coll, s)) or {}).get(model)
                if p and p.get("chosen"):
                    seq.append((s, p["chosen"]))
            return seq
        tuned, default = chosen("tuned"), chosen("default")
        result[coll] = {"per_size": [{"size": s, "fastest": a, "fastest_us": min(r["time_us"] for r in per_size[s]),
                                      "tuned": dict(tuned).get(s), "default": dict(default).get(s)}
                                     for s, a in fastest],
                        "measured": changes(fastest), "tuned": changes(tuned), "default": changes(default)}
    return result


def describe_changes(ch):
    if not ch:
        return "none"
    return "; ".join(f"{c['from']} -> {c['to']} between {human(c['between'][0])} and {human(c['between'][1])}"
                     for c in ch)


# ------------------------------------------------------------------------------ outliers

def unordered_pairs(run):
    """(i, j) i < j -> {class, bandwidth (lower direction), latency (higher), directions}."""
    out = {}
    for p in run.pairs:
        key = (min(p.frm, p.to), max(p.frm, p.to))
        e = out.setdefault(key, {"class": p.cls, "directions": []})
        e["directions"].append(p)
    for e in out.values():
        bws = [d.bandwidth for d in e["directions"] if d.bandwidth]
        lats = [d.latency for d in e["directions"] if d.latency]
        e["bandwidth"] = min(bws) if bws else None
        e["latency"] = max(lats) if lats else None
    return out


def pair_outliers(run):
    pairs = unordered_pairs(run)
    refs, outliers, hosts_named = {}, [], []
    by_class = defaultdict(list)
    for key, e in pairs.items():
        by_class[e["class"]].append(key)
    for cls, keys in by_class.items():
        bws = [pairs[k]["bandwidth"] for k in keys if pairs[k]["bandwidth"]]
        lats = [pairs[k]["latency"] for k in keys if pairs[k]["latency"]]
        ref = {"bandwidth_GBps": nearest_rank(bws, BANDWIDTH_PERCENTILE) if bws else None,
               "latency_us": nearest_rank(lats, LATENCY_PERCENTILE) if lats else None,
               "median_bandwidth_GBps": median(bws), "median_latency_us": median(lats), "pairs": len(keys)}
        refs[cls] = ref
        for k in keys:
            e = pairs[k]
            why = []
            bw_ref, lat_ref = ref["bandwidth_GBps"], ref["latency_us"]
            if e["bandwidth"] and bw_ref and e["bandwidth"] < PAIR_BANDWIDTH_FACTOR * bw_ref:
                why.append("bandwidth")
            if e["latency"] and lat_ref and e["latency"] > PAIR_LATENCY_FACTOR * lat_ref:
                why.append("latency")
            e["outlier"] = why
        # A host whose pairs of this class are (nearly) all outliers while others' are not.
        flagged = [k for k in keys if pairs[k]["outlier"]]
        if not flagged or len(flagged) == len(keys):
            continue
        for host in run.hosts:
            mine = [k for k in keys if run.host_of.get(k[0]) == host.key or run.host_of.get(k[1]) == host.key]
            bad = [k for k in mine if pairs[k]["outlier"]]
            if mine and len(bad) >= HOST_SHARE * len(mine):
                kinds = {w for k in bad for w in pairs[k]["outlier"]}
                what = ("below half the class's bandwidth" if kinds == {"bandwidth"} else
                        "above twice the class's latency" if kinds == {"latency"} else
                        "below half the class's bandwidth or above twice its latency")
                hosts_named.append({"kind": "host", "host": host.label, "class": cls, "bad": len(bad),
                                    "pairs": len(mine),
                                    "text": f"host {host.label}: {len(bad)} of {len(mine)} {cls} pairs {what}"})
    for (i, j), e in sorted(pairs.items()):
        if not e.get("outlier"):
            continue
        ref = refs[e["class"]]
        parts = []
        if "bandwidth" in e["outlier"]:
            parts.append(f"{e['bandwidth']:.3g} GB/s < {PAIR_BANDWIDTH_FACTOR} x {ref['bandwidth_GBps']:.3g}")
        if "latency" in e["outlier"]:
            parts.append(f"{e['latency']:.3g} us > {PAIR_LATENCY_FACTOR} x {ref['latency_us']:.3g}")
        outliers.append({"kind": "pair", "pair": [i, j], "class": e["class"],
                         "hosts": [run.host_label(i), run.host_label(j)], "why": e["outlier"],
                         "text": f"pair {i}-{j} ({run.host_label(i)}-{run.host_label(j)}, {e['class']}): "
                                 + "; ".join(parts)})
    return pairs, refs, hosts_named + outliers


def rank_outliers(run):
    rows = [r for r in run.sweep if len(r["rank_avg_us"]) >= 2 and all(v > 0 for v in r["rank_avg_us"])]
    if not rows:
        return []
    slow, ratio = Counter(), defaultdict(list)
    for r in rows:
        m = statistics.median(r["rank_avg_us"])
        for rank, v in enumerate(r["rank_avg_us"]):
            ratio[rank].append(v / m)
            if v > RANK_SLOW_FACTOR * m:
                slow[rank] += 1
    out = []
    for rank, count in sorted(slow.items()):
        if count >= RANK_SLOW_SHARE * len(rows):
            mean = statistics.mean(ratio[rank])
            out.append({"kind": "rank", "rank": rank, "host": run.host_label(rank), "rows": count, "of": len(rows),
                        "text": f"rank {rank} (host {run.host_label(rank)}): above {RANK_SLOW_FACTOR} x the median "
                                f"rank's time in {count} of {len(rows)} sweep rows (mean {mean:.2f}x)"})
    return out


def row_name(r):
    ran = f" (ran {r['ran']})" if r["ran"] != r["algorithm"] else ""
    return f"{r['collective']} {r['algorithm']}{ran} {human(r['size'])}"


SPREAD_FLOOR_US = 5.0


def row_outliers(run, cv_threshold, floor_us=SPREAD_FLOOR_US):
    out = []
    for r in run.sweep:
        if r["cv_pct"] is not None and r["cv_pct"] > cv_threshold and (r["stdev_us"] is None or r["stdev_us"] >= floor_us):
            out.append({"kind": "spread", "row": [r["collective"], r["algorithm"], r["size"]], "cv_pct": r["cv_pct"],
                        "text": f"{row_name(r)}: iteration cv {r['cv_pct']:.1f}% > {cv_threshold:g}%"})
        if r["wrong"]:
            out.append({"kind": "wrong", "row": [r["collective"], r["algorithm"], r["size"]], "wrong": r["wrong"],
                        "text": f"{row_name(r)}: {r['wrong']} wrong elements"})
    return out


# ------------------------------------------------------------------------------ regressions

def read_rules(path):
    rules = []
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: {getattr(e, 'strerror', None) or e}")
    for number_, line in enumerate(lines, 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        where = f"{path}:{number_}"
        if len(words) != 3:
            raise InputError(f"{where}: expected 'METRIC OP THRESHOLD', got '{line.strip()}'")
        metric, op, threshold = words
        if metric not in METRICS:
            raise InputError(f"{where}: unknown metric '{metric}' (expected {', '.join(METRICS)})")
        if op not in OPS:
            raise InputError(f"{where}: unknown op '{op}' (expected {' '.join(OPS)})")
        try:
            value = float(threshold)
        except ValueError:
            value = float("nan")
        if not math.isfinite(value):
            raise InputError(f"{where}: threshold '{threshold}' is not a number")
        rules.append((metric, op, value))
    return rules


def merge_rules(file_rules):
    named = {m for m, _, _ in file_rules}
    return [r for r in DEFAULT_RULES if r[0] not in named] + file_rules


def regressions(run, base, rules):
    """Violations of `rules` (base may be None: then only cv_pct applies), and defective hosts."""
    values = defaultdict(list)  # metric -> [(what, value, extra)]
    for r in run.sweep:
        if r["cv_pct"] is not None:
            values["cv_pct"].append((row_name(r), r["cv_pct"], None))
    directions_with_base = []
    if base:
        old_rows = {(r["collective"], r["algorithm"], r["size"]): r for r in base.sweep}
        for r in run.sweep:
            o = old_rows.get((r["collective"], r["algorithm"], r["size"]))
            if not o:
                continue
            if o["busbw_GBps"] > 0:
                drop = 100 * (o["busbw_GBps"] - r["busbw_GBps"]) / o["busbw_GBps"]
                values["busbw_drop_pct"].append((row_name(r), drop, None))
            if o["time_us"] > 0:
                values["time_rise_pct"].append((row_name(r), 100 * (r["time_us"] - o["time_us"]) / o["time_us"], None))
        old_pairs = {(p.frm, p.to): p for p in base.pairs}
        for p in run.pairs:
            o = old_pairs.get((p.frm, p.to))
            if not o:
                continue
            directions_with_base.append(p)
            what = f"{p.frm}->{p.to} ({run.host_label(p.frm)}->{run.host_label(p.to)}, {p.cls})"
            if o.bandwidth and p.bandwidth:
                values["p2p_bandwidth_drop_pct"].append((what, 100 * (o.bandwidth - p.bandwidth) / o.bandwidth, p))
            if o.latency and p.latency:
                values["p2p_latency_rise_pct"].append((what, 100 * (p.latency - o.latency) / o.latency, p))
    found, violated = [], set()
    for metric, op, threshold in rules:
        for what, value, pair in values.get(metric, []):
            if OPS[op](value, threshold):
                found.append({"kind": "regression", "metric": metric, "op": op, "threshold": threshold,
                              "value": value, "what": what,
                              "text": f"{what}: {metric} {value:.1f} {op} {threshold:g}"})
                if pair is not None:
                    violated.add((pair.frm, pair.to))
    defective = []
    for cls in sorted({p.cls for p in directions_with_base}):
        dirs = [p for p in directions_with_base if p.cls == cls]
        named = []
        for host in run.hosts:
            mine = [p for p in dirs if host.key in (run.host_of.get(p.frm), run.host_of.get(p.to))]
            bad = [p for p in mine if (p.frm, p.to) in violated]
            if mine and len(bad) >= HOST_SHARE * len(mine):
                named.append((host, len(bad), len(mine)))
        every = len(named) == len({run.host_of.get(r) for p in dirs for r in (p.frm, p.to)}) and len(named) > 1
        for host, bad, total in named:
            defective.append({"kind": "defective_host", "host": host.label, "class": cls, "bad": bad, "of": total,
                              "text": f"defective host {host.label}: {bad} of {total} {cls} pair directions violate "
                                      "the rules" + (" (every host of the class: not one host's fault)" if every
                                                     else "")})
    return found, defective, sorted(values)


# ------------------------------------------------------------------------------ plots

def plot_all(run, out_dir, pairs, refs, pred_rows, outliers, cv_threshold):
    """Writes the PNGs; returns ({name: path}, note)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.colors import LogNorm
        from matplotlib.ticker import FuncFormatter
    except ImportError as e:
        return {}, f"no plots: matplotlib is missing ({e})"
    made = {}

    def save(fig, name):
        path = os.path.join(out_dir, name)
        # No Software tag: the PNGs carry nothing but the picture.
        fig.savefig(path, dpi=100, metadata={"Software": None})
        plt.close(fig)
        made[name] = path

    for coll in run.collectives():
        fig, ax = plt.subplots(figsize=(8, 5))
        algos = []
        for r in run.sweep:
            if r["collective"] == coll and r["algorithm"] not in algos:
                algos.append(r["algorithm"])
        for a in algos:
            rows = sorted((r for r in run.sweep if r["collective"] == coll and r["algorithm"] == a),
                          key=lambda r: r["size"])
            fell_back = any(r["ran"] != a for r in rows)
            ax.plot([r["size"] for r in rows], [r["busbw_GBps"] for r in rows], marker="o", markersize=3,
                    label=a + (" (fell back)" if fell_back else ""), linestyle="--" if fell_back else "-")
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: human(int(v)) if v >= 1 else ""))
        ax.set_xlabel("size (bytes)")
        ax.set_ylabel("bus bandwidth (GB/s)")
        ax.set_title(f"{coll}: measured bus bandwidth, {run.nranks} ranks")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        save(fig, f"busbw_{re.sub(r'[^A-Za-z0-9_]', '_', coll)}.png")

    n = run.nranks
    if run.pairs and n >= 2:
        for name, attr, unit, cmap in (("p2p_bandwidth.png", "bandwidth", "GB/s", "viridis"),
                                       ("p2p_latency.png", "latency", "us", "magma_r")):
            matrix = [[float("nan")] * n for _ in range(n)]
            for p in run.pairs:
                v = getattr(p, attr)
                if v:
                    matrix[p.frm][p.to] = v
            values = [v for row in matrix for v in row if v == v]
            # Classes differ by orders of magnitude (memory against network): a log scale shows both.
            norm = LogNorm(min(values), max(values)) if values and max(values) > 20 * min(values) else None
            fig, ax = plt.subplots(figsize=(8, 6.5))
            im = ax.imshow(matrix, cmap=cmap, norm=norm)
            fig.colorbar(im, ax=ax, label=unit)
            step = max(1, n // 32)
            ticks = list(range(0, n, step))
            labels = [f"{r} {run.host_label(r)}" if n <= 16 else str(r) for r in ticks]
            ax.set_xticks(ticks)
            ax.set_xticklabels(labels, rotation=90, fontsize=7)
            ax.set_yticks(ticks)
            ax.set_yticklabels(labels, fontsize=7)
            if n <= 12:
                for i in range(n):
                    for j in range(n):
                        if matrix[i][j] == matrix[i][j]:
                            r_, g_, b_, _ = im.cmap(im.norm(matrix[i][j]))
                            ax.text(j, i, f"{matrix[i][j]:.3g}", ha="center", va="center", fontsize=7,
                                    color="k" if 0.299 * r_ + 0.587 * g_ + 0.114 * b_ > 0.5 else "w")
            ax.set_xlabel("to rank")
            ax.set_ylabel("from rank")
            ax.set_title(f"point-to-point {attr} ({unit}), per direction")
            fig.tight_layout()
            save(fig, name)

    if pred_rows:
        fig, ax = plt.subplots(figsize=(8, 5))
        for key, marker, label in (("tuned_us", "o", "tuned terms"), ("default_us", "x", "default terms")):
            pts = [(r["measured_us"], r[key]) for r in pred_rows if r[key]]
            if pts:
                ax.scatter([p[0] for p in pts], [p[1] for p in pts], marker=marker, s=18, label=label)
        values = [v for r in pred_rows for v in (r["measured_us"], r["tuned_us"], r["default_us"]) if v]
        lo, hi = min(values) / 2, max(values) * 2
        ax.plot([lo, hi], [lo, hi], color="k", linewidth=1, label="predicted = measured")
        ax.plot([lo, hi], [lo * 2, hi * 2], color="gray", linewidth=0.7, linestyle=":", label="2x, 0.5x")
        ax.plot([lo, hi], [lo / 2, hi / 2], color="gray", linewidth=0.7, linestyle=":")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_xlabel("measured time (us)")
        ax.set_ylabel("predicted time (us)")
        ax.set_title("cost model against the sweep")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        save(fig, "predicted_vs_measured.png")

    cv_rows = [r for r in run.sweep if r["cv_pct"] is not None]
    if pairs or cv_rows:
        panels = (1 if pairs else 0) + (1 if cv_rows else 0)
        fig, axes = plt.subplots(panels, 1, figsize=(8, 5 if panels == 1 else 7), squeeze=False)
        axes = [a[0] for a in axes]
        if pairs:
            ax = axes.pop(0)
            keys = sorted(pairs, key=lambda k: (CLASS_ORDER.index(pairs[k]["class"]) if pairs[k]["class"]
                                                in CLASS_ORDER else 99, k))
            heights = [pairs[k]["bandwidth"] or 0 for k in keys]
            colors = ["tab:red" if pairs[k].get("outlier") else "tab:gray" for k in keys]
            ax.bar(range(len(keys)), heights, color=colors)
            positive = [v for v in heights if v > 0]
            if positive and max(positive) > 20 * min(positive):
                ax.set_yscale("log")
            for cls in dict.fromkeys(pairs[k]["class"] for k in keys):
                idx = [i for i, k in enumerate(keys) if pairs[k]["class"] == cls]
                ref = refs[cls]["bandwidth_GBps"]
                if ref:
                    ax.hlines(PAIR_BANDWIDTH_FACTOR * ref, idx[0] - 0.4, idx[-1] + 0.4, colors="tab:blue",
                              linestyles="--")
                    ax.text((idx[0] + idx[-1]) / 2, ref * 1.05, cls, ha="center", va="bottom", fontsize=8,
                            color="tab:blue")
            if len(keys) <= 40:
                ax.set_xticks(range(len(keys)))
                ax.set_xticklabels([f"{i}-{j}" for i, j in keys], rotation=90, fontsize=7)
            ax.set_ylabel("GB/s (lower direction)")
            ax.set_title("pairs: red = outlier; dashed = half the class's reference")
        if cv_rows:
            ax = axes.pop(0)
            ax.bar(range(len(cv_rows)), [r["cv_pct"] for r in cv_rows],
                   color=["tab:red" if r["cv_pct"] > cv_threshold else "tab:gray" for r in cv_rows])
            ax.axhline(cv_threshold, color="tab:blue", linestyle="--")
            ax.set_ylabel("iteration cv (%)")
            ax.set_xlabel("sweep row")
            ax.set_title(f"sweep rows: red = cv above {cv_threshold:g}%")
        fig.tight_layout()
        save(fig, "outliers.png")
    return made, ""


# ------------------------------------------------------------------------------ the report

class Report:
    """Blocks rendered both as Markdown and as self-contained HTML."""

    def __init__(self):
        self.blocks = []

    def h(self, level, title):
        self.blocks.append(("h", level, title))

    def p(self, line):
        self.blocks.append(("p", line))

    def ul(self, items):
        if items:
            self.blocks.append(("ul", list(items)))

    def table(self, header, rows, align=None):
        if rows:
            self.blocks.append(("table", header, [[str(c) for c in r] for r in rows],
                                align or ["l"] + ["r"] * (len(header) - 1)))

    def pre(self, body):
        self.blocks.append(("pre", body))

    def img(self, path, alt):
        if path:
            self.blocks.append(("img", path, alt))

    def markdown(self):
        out = []
        for b in self.blocks:
            if b[0] == "h":
                out.append("#" * b[1] + " " + b[2])
            elif b[0] == "p":
                out.append(b[1])
            elif b[0] == "ul":
                out.append("\n".join("- " + i for i in b[1]))
            elif b[0] == "table":
                _, header, rows, align = b
                cell = lambda c: c.replace("|", "\\|")  # noqa: E731
                lines = ["| " + " | ".join(cell(h) for h in header) + " |",
                         "|" + "|".join("---:" if a == "r" else ":--" for a in align) + "|"]
                lines += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
                out.append("\n".join(lines))
            elif b[0] == "pre":
                out.append("```\n" + b[1].rstrip("\n") + "\n```")
            elif b[0] == "img":
                out.append(f"![{b[2]}]({os.path.basename(b[1])})")
        return "\n\n".join(out) + "\n"

    def html(self, title):
        e = html.escape
        out = ["<!DOCTYPE html>", "<html><head><meta charset=\"utf-8\">", f"<title>{e(title)}</title>",
               "<style>body{font-family:sans-serif;max-width:1100px;margin:1em auto;padding:0 1em;color:#222}"
               "table{border-collapse:collapse;margin:.5em 0;font-size:90%}"
               "td,th{border:1px solid #bbb;padding:2px 6px}th{background:#eee}td.r{text-align:right}"
               "pre{background:#f4f4f4;padding:.5em;overflow-x:auto}img{max-width:100%}"
               "h2{border-bottom:1px solid #ccc}</style>", "</head><body>"]
        for b in self.blocks:
            if b[0] == "h":
                out.append(f"<h{b[1]}>{e(b[2])}</h{b[1]}>")
            elif b[0] == "p":
                out.append(f"<p>{e(b[1])}</p>")
            elif b[0] == "ul":
                out.append("<ul>" + "".join(f"<li>{e(i)}</li>" for i in b[1]) + "</ul>")
            elif b[0] == "table":
                _, header, rows, align = b
                out.append("<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in header) + "</tr>")
                for r in rows:
                    out.append("<tr>" + "".join(f"<td class=\"{a}\">{e(c)}</td>" for c, a in zip(r, align)) + "</tr>")
                out.append("</table>")
            elif b[0] == "pre":
                out.append(f"<pre>{e(b[1])}</pre>")
            elif b[0] == "img":
                with open(b[1], "rb") as f:
                    data = base64.b64encode(f.read()).decode("ascii")
                out.append(f"<p><img alt=\"{e(b[2])}\" src=\"data:image/png;base64,{data}\"></p>")
        out.append("</body></html>")
        return "\n".join(out) + "\n"


def host_differences(run):
    """Each host against the most common value of each property: 'h2: 2 NICs (others: 1)'."""
    def nics(h):
        return h.info.get("nics") if isinstance(h.info.get("nics"), list) else None

    props = [
        ("ranks", lambda h: len(h.ranks)),
        ("cores", lambda h: h.info.get("cores")),
        ("PUs", lambda h: h.info.get("pus")),
        ("packages", lambda h: h.info.get("packages")),
        ("NUMA nodes", lambda h: h.info.get("numa_nodes")),
        ("GiB memory", lambda h: round(h.info["memory_bytes"] / 2 ** 30, 1) if is_number(h.info.get("memory_bytes"))
         else None),
        ("CPU", lambda h: h.info.get("cpu_model") or None),
        ("GPUs", lambda h: len(h.info["gpus"]) if isinstance(h.info.get("gpus"), list) else None),
        ("GPU models", lambda h: ", ".join(sorted(set(map(str, h.info["gpus"])))) if h.info.get("gpus") else None),
        ("NICs", lambda h: len(nics(h)) if nics(h) is not None else None),
        ("Gb/s NIC speeds", lambda h: ", ".join(f"{v:g}" for v in sorted(
            {n.get("speed_gbps", 0) for n in nics(h) if isinstance(n, dict)})) if nics(h) else None),
    ]
    lines = []
    if len(run.hosts) < 2:
        return lines
    for name, get in props:
        values = [(h, get(h)) for h in run.hosts]
        known = [v for _, v in values if v is not None]
        if len(known) < 2:
            continue
        common = Counter(known).most_common(1)[0][0]
        for h, v in values:
            if v is not None and v != common:
                lines.append(f"{h.label}: {v} {name} (others: {common})")
    return lines


def build_report(run, a, plots, args):
    r = Report()
    r.h(1, "weft-characterize report")
    # Run summary.
    r.h(2, "Run")
    state = "complete" if run.complete else ("stopped by " + (run.stopped_by or "an unknown cause"))
    r.table(["", ""], [
        ["weft", run.doc.get("weft_version", "?")],
        ["ranks", run.nranks],
        ["hosts", len(run.hosts)],
        ["started", run.doc.get("start_time", "?")], ["ended", run.doc.get("end_time", "?")],
        ["elapsed", f"{run.doc['elapsed_s']:.1f} s" if is_number(run.doc.get("elapsed_s")) else "?"],
        ["state", state],
        ["command", " ".join(map(str, run.doc.get("args") or []))],
        ["options", ", ".join(f"{k} {v}" for k, v in (run.doc.get("options") or {}).items())],
        ["input", os.path.basename(run.path)]], align=["l", "l"])
    missing = run.missing()
    if missing:
        r.p("Missing from this run:")
        r.ul(missing)
    if run.skipped:
        r.p("Skipped:")
        r.ul(f"{what}: {why}" for what, why in run.skipped)

    # Hosts.
    r.h(2, "Hosts")
    rows = []
    for h in run.hosts:
        i = h.info
        nic_list = i.get("nics") if isinstance(i.get("nics"), list) else []
        rows.append([h.label, ",".join(map(str, h.ranks)), i.get("packages", "?"), i.get("numa_nodes", "?"),
                     i.get("cores", "?"), i.get("pus", "?"),
                     f"{i['memory_bytes'] / 2 ** 30:.1f}" if is_number(i.get("memory_bytes")) else "?",
                     i.get("cpu_model", "?"), ", ".join(map(str, i.get("gpus") or [])) or "-",
                     ", ".join(f"{n.get('name', '?')} {n.get('speed_gbps', 0):g} Gb/s" for n in nic_list
                               if isinstance(n, dict)) or "-"])
    r.table(["host", "ranks", "packages", "NUMA", "cores", "PUs", "GiB", "CPU", "GPUs", "NICs"], rows,
            align=["l", "l", "r", "r", "r", "r", "r", "l", "l", "l"])
    diffs = a["host_differences"]
    r.p("Differences between hosts:" if diffs else "No differences between hosts in what the survey reports."
        if len(run.hosts) > 1 else "One host.")
    r.ul(diffs)

    # Point to point.
    r.h(2, "Point to point")
    if not run.pairs:
        r.p("No point-to-point measurements.")
    else:
        n = run.nranks
        if n <= 32:
            for attr, title, fmt in (("latency", "Latency (us), 8 B, half the round trip; row: from, column: to",
                                      "{:.3g}"),
                                     ("bandwidth", "Bandwidth (GB/s), largest size; row: from, column: to", "{:.3g}")):
                m = {(p.frm, p.to): getattr(p, attr) for p in run.pairs}
                r.p(title)
                r.table(["from \\ to"] + [str(j) for j in range(n)],
                        [[f"{i} {run.host_label(i)}"] + ["-" if i == j or m.get((i, j)) is None
                                                         else fmt.format(m[(i, j)]) for j in range(n)]
                         for i in range(n)])
        else:
            r.p(f"{n} ranks: the matrices are in the heat maps below.")
        r.img(plots.get("p2p_latency.png"), "point-to-point latency")
        r.img(plots.get("p2p_bandwidth.png"), "point-to-point bandwidth")
        r.p("Per class (pairs: both directions together; reference: what the outlier rules compare with):")
        r.table(["class", "pairs", "median latency us", "median GB/s", "reference latency us (p25)",
                 "reference GB/s (p75)"],
                [[c, ref["pairs"], g3(ref["median_latency_us"]), g3(ref["median_bandwidth_GBps"]),
                  g3(ref["latency_us"]), g3(ref["bandwidth_GBps"])] for c, ref in a["class_references"].items()])

    # Fits and the tuning file.
    r.h(2, "Fitted link terms")
    r.p("t = alpha + S/B per link class, least squares weighted 1/t^2 over every pair's points "
        "(perf/fit_link_model.py's fit). Host-memory ranks meet in shared memory: the intra-node classes "
        "become `link Memory` at twice the slowest class's B (the hop runs at Memory / 2, copied in and out); "
        "across_hosts becomes `link Network`, one flow through one NIC.")
    r.table(["class", "directions", "points", "alpha us", "B GB/s", "max residual", "notes"],
            [[f["class"], f["directions"], f["points"], g3(f["alpha_us"]), g3(f["bandwidth_GBps"]),
              f"{f['max_residual_pct']:.0f}%" if "max_residual_pct" in f else "-", "; ".join(f["notes"])]
             for f in a["fits"]], align=["l", "r", "r", "r", "r", "r", "l"])
    outlier_classes = sorted({o["class"] for o in a["outliers"] if o["kind"] == "pair"})
    if outlier_classes:
        r.p("The fits include outlier pairs (" + ", ".join(outlier_classes) + "): they pull those classes' terms "
            "toward the slow pairs, which the collectives wait for too.")
    tuning = a["tuning"]
    r.p(f"Tuning file {tuning['path']}" + (f" (read back by weft-info: {tuning['links']})" if tuning["read_back"]
                                           else f" DID NOT read back: {tuning['problem']}"))
    r.pre(tuning["text"])
    for note in tuning["notes"]:
        r.p(note)

    # Sweep.
    r.h(2, "Sweep")
    if not run.sweep:
        r.p("No collective measurements.")
    for coll in run.collectives():
        rows_c = [x for x in run.sweep if x["collective"] == coll]
        algos = list(dict.fromkeys(x["algorithm"] for x in rows_c))
        r.h(3, coll)
        table = []
        for size in sorted({x["size"] for x in rows_c}):
            at = {x["algorithm"]: x for x in rows_c if x["size"] == size}
            cells = []
            for al in algos:
                x = at.get(al)
                if not x:
                    cells.append("-")
                    continue
                cells.append(f"{x['busbw_GBps']:.3g}" + (f" (ran {x['ran']})" if x["ran"] != al else ""))
            wrong = sum(x["wrong"] for x in at.values())
            cvs = [x["cv_pct"] for x in at.values() if x["cv_pct"] is not None]
            table.append([human(size)] + cells + [wrong, f"{max(cvs):.1f}" if cvs else "-"])
        r.p("Bus bandwidth (GB/s) per algorithm; #wrong summed over the row; cv: the largest iteration cv (%).")
        r.table(["size"] + algos + ["#wrong", "max cv %"], table)
        r.img(plots.get(f"busbw_{re.sub(r'[^A-Za-z0-9_]', '_', coll)}.png"), f"{coll} bus bandwidth")

    # Predicted against measured.
    r.h(2, "Predicted against measured")
    pred = a["predictions"]
    r.p(f"weft-info plan COLLECTIVE SIZE --ranks {a['layout']['ranks']} --ranks-per-node {a['layout']['per_node']}, "
        "with the tuning file (tuned) and without it (default); the measured time is the sweep's (rows where the "
        "forced algorithm ran, without wrong elements).")
    r.ul(a["layout"]["notes"] + pred["notes"] + pred["errors"][:5])
    summary = []
    for coll in run.collectives():
        rows_c = [x for x in pred["rows"] if x["collective"] == coll]
        cells = [coll, len(rows_c)]
        for key in ("tuned_ratio", "default_ratio"):
            ratios = [x[key] for x in rows_c if x[key]]
            if ratios:
                gm = math.exp(statistics.mean(math.log(v) for v in ratios))
                inside = sum(1 for v in ratios if 0.5 <= v <= 2) / len(ratios)
                cells += [f"{gm:.2f}", f"{100 * inside:.0f}%"]
            else:
                cells += ["-", "-"]
        summary.append(cells)
    r.table(["collective", "rows", "tuned/measured (geo. mean)", "tuned within [0.5, 2]",
             "default/measured (geo. mean)", "default within [0.5, 2]"], summary)
    r.img(plots.get("predicted_vs_measured.png"), "predicted against measured")
    r.table(["collective", "size", "algorithm", "measured us", "tuned us", "tuned/measured", "default us",
             "default/measured"],
            [[x["collective"], human(x["size"]), x["algorithm"], f"{x['measured_us']:.2f}", g3(x["tuned_us"]),
              f"{x['tuned_ratio']:.2f}" if x["tuned_ratio"] else "-", g3(x["default_us"]),
              f"{x['default_ratio']:.2f}" if x["default_ratio"] else "-"] for x in pred["rows"]],
            align=["l", "r", "l", "r", "r", "r", "r", "r"])

    # Crossovers.
    r.h(2, "Crossovers")
    for coll, c in a["crossovers"].items():
        r.h(3, coll)
        r.ul([f"measured fastest: {describe_changes(c['measured'])}",
              f"tuned model's choice: {describe_changes(c['tuned'])}",
              f"default model's choice: {describe_changes(c['default'])}"])
        r.table(["size", "fastest measured", "us", "tuned model", "default model"],
                [[human(x["size"]), x["fastest"], f"{x['fastest_us']:.2f}", x["tuned"] or "-", x["default"] or "-"]
                 for x in c["per_size"]], align=["r", "l", "r", "l", "l"])

    # Selection.
    r.h(2, "Default against tuned selection")
    if not run.selection:
        r.p("Not measured in this run" + ("" if run.present["selection"] else " (the tuning-only pass, or stopped "
                                                                          "before it)") + ".")
    else:
        rows = []
        slower = differ = 0
        for s in run.selection:
            ratio = s["tuned_us"] / s["default_us"] if s["default_us"] > 0 else None
            note = ""
            if s["tuned_algorithm"] == s["default_algorithm"]:
                note = "same choice (the ratio is noise)"
            else:
                differ += 1
                if ratio and ratio > TUNED_SLOWER:
                    note = f"tuned slower by {100 * (ratio - 1):.1f}%"
                    slower += 1
            rows.append([s["collective"], human(s["size"]), s["default_algorithm"], f"{s['default_us']:.2f}",
                         s["tuned_algorithm"], f"{s['tuned_us']:.2f}", f"{ratio:.2f}" if ratio else "-", note])
        r.p(f"Each the best of two runs, interleaved (ABBA). The tuned model chose differently in {differ} of "
            f"{len(rows)} rows; in {slower} of those its choice was more than {100 * (TUNED_SLOWER - 1):.0f}% slower.")
        r.table(["collective", "size", "default", "default us", "tuned", "tuned us", "tuned/default", "note"], rows,
                align=["l", "r", "l", "r", "l", "r", "r", "l"])

    # Outliers.
    r.h(2, "Outliers")
    r.p("Rules: a pair whose bandwidth (lower direction) is below 0.5 x its class's 75th percentile, or whose "
        "latency (higher direction) is above 2 x its class's 25th percentile; a host with >= 75% of its pairs of a "
        "class outliers while the class has others; a rank above 1.25 x the median rank's time in >= 75% of the "
        f"sweep rows; a sweep row with iteration cv above {args.cv_threshold:g}%; a row with wrong elements.")
    r.img(plots.get("outliers.png"), "outliers")
    r.ul([o["text"] for o in a["outliers"]] or ["none"])
    if args.baseline or args.rules:
        r.h(3, "Regressions" + (f" against {os.path.basename(args.baseline)}" if args.baseline else ""))
        r.p("Rules: " + "; ".join(f"{m} {op} {t:g}" for m, op, t in a["rules"]) +
            ("" if args.baseline else " (without --baseline only cv_pct applies)"))
        r.ul([o["text"] for o in a["defective_hosts"]])
        r.ul([o["text"] for o in a["regressions"]] or ["none"])
    if plots.get("_note"):
        r.p(plots["_note"])
    return r


# ------------------------------------------------------------------------------ main

def parse_args(argv):
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("json")
    parser.add_argument("--out", required=True)
    parser.add_argument("--weft-info", required=True)
    parser.add_argument("--tuning-only", action="store_true")
    parser.add_argument("--baseline")
    parser.add_argument("--rules")
    parser.add_argument("--cv-threshold", type=float, default=25.0)
    return parser.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    run = Run(args.json)
    if not (os.path.isfile(args.weft_info) and os.access(args.weft_info, os.X_OK)):
        raise InputError(f"--weft-info {args.weft_info}: not an executable file")
    rules = merge_rules(read_rules(args.rules) if args.rules else [])
    base = Run(args.baseline) if args.baseline else None
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as e:
        raise InputError(f"--out {args.out}: {e.strerror}")

    fits = fit_classes(run)
    tuning_text, directives = tuning_directives(run, fits)
    tuning_path = os.path.join(args.out, "weft.tuning")
    # Written beside its place and moved there only once weft-info reads it back: a file that
    # would fail a job's init never takes the name a user points WEFT_TUNING_FILE at.
    candidate = tuning_path + ".candidate"
    with open(candidate, "w", encoding="utf-8") as f:
        f.write(tuning_text)
    nranks, per_node, layout_notes = layout_of(run)
    ok, links, problem = check_read_back(
        Planner(os.path.abspath(args.weft_info), nranks, per_node, os.path.abspath(candidate)), directives)
    if not ok:
        print(f"{PROG}: the fitted tuning file does not read back through weft-info ({candidate} kept): {problem}",
              file=sys.stderr)
        return 1
    os.replace(candidate, tuning_path)
    planner = Planner(os.path.abspath(args.weft_info), nranks, per_node, os.path.abspath(tuning_path))
    if args.tuning_only:
        print(tuning_path)
        return 0
    tuning_notes = []
    if run.tuning_file and os.path.abspath(run.tuning_file) != os.path.abspath(tuning_path):
        try:
            with open(run.tuning_file, encoding="utf-8") as f:
                if f.read() != tuning_text:
                    tuning_notes.append(f"The run's selection used {run.tuning_file}, whose text differs from "
                                        "this one.")
        except OSError:
            tuning_notes.append(f"The run's selection used {run.tuning_file}, which is not readable here.")

    plans, pred_rows, pred_notes = predict(run, planner, tuned=bool(directives))
    cross = crossovers(run, plans)
    pairs, refs, p_out = pair_outliers(run)
    outliers = p_out + rank_outliers(run) + row_outliers(run, args.cv_threshold)
    found, defective, _ = regressions(run, base, rules) if (base or args.rules) else ([], [], [])

    analysis = {
        "input": os.path.abspath(run.path), "nranks": run.nranks, "hosts": [h.label for h in run.hosts],
        "complete": run.complete, "stopped_by": run.stopped_by, "missing": run.missing(),
        "host_differences": host_differences(run),
        "layout": {"ranks": nranks, "per_node": per_node, "notes": layout_notes},
        "fits": fits,
        "tuning": {"path": tuning_path, "text": tuning_text, "directives": directives, "read_back": ok,
                   "links": links, "problem": problem, "notes": tuning_notes},
        "class_references": refs,
        "predictions": {"rows": pred_rows, "notes": pred_notes, "errors": planner.errors,
                        "weft_info_calls": planner.calls},
        "crossovers": cross,
        "outliers": outliers,
        "rules": [list(x) for x in rules] if (base or args.rules) else [],
        "baseline": os.path.abspath(base.path) if base else None,
        "regressions": found, "defective_hosts": defective,
        "cv_threshold_pct": args.cv_threshold,
    }
    plots, note = plot_all(run, args.out, pairs, refs, pred_rows, outliers, args.cv_threshold)
    analysis["plots"] = sorted(plots)
    if note:
        plots["_note"] = note
    with open(os.path.join(args.out, "analysis.json"), "w", encoding="utf-8") as f:
        json.dump(analysis, f, indent=1)
        f.write("\n")
    report = build_report(run, analysis, plots, args)
    with open(os.path.join(args.out, "report.md"), "w", encoding="utf-8") as f:
        f.write(report.markdown())
    with open(os.path.join(args.out, "report.html"), "w", encoding="utf-8") as f:
        f.write(report.html(f"weft-characterize: {run.nranks} ranks on {len(run.hosts)} hosts"))

    for o in outliers:
        print("outlier: " + o["text"])
    for o in defective + found:
        print("regression: " + o["text"])
    for m in run.missing():
        print("missing: " + m)
    print(f"report: {os.path.join(args.out, 'report.md')} and report.html; tuning file: {tuning_path}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except InputError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        sys.exit(2)
