#!/usr/bin/env python3
"""weft beside Open MPI and Gloo on this machine: one run, the systems alternated, one table (issue 14).

Usage: compare.py BUILD_DIR [--collective all_reduce] [--ranks 2] [--transports shm,tcp] [-b 8]
                  [-e 64M] [-f 8] [-n 20] [-w 5] [--rounds 3] [--load 0]
                  [--hosts H [--rate RATE] [--pin]] [--no-phase-check]

--collective: all_reduce (the default), all_gather, reduce_scatter, broadcast, reduce or alltoall.
For every round (the order of the systems alternates from round to round, so a drift of the
machine's speed falls on both), every transport and every system, the same sweep of that
collective (float, sum for the reductions, root 0 for the rooted ones, out of place; nccl-tests'
sizes and bus factors: 2(n-1)/n for all_reduce, (n-1)/n for all_gather, reduce_scatter and
alltoall, whose size is the n blocks together, 1 for broadcast and reduce) runs:
  weft     build/perf/<collective>_perf under weftrun (shm: weft's default on one host; tcp:
           WEFT_TRANSPORT=tcp over loopback), -c 0; then once more with -C 1 for the CPU time
  Open MPI build/perf/mpi_collective_bench --collective <collective> under mpirun (--mca pml ob1,
           btl self,vader for shm, self,tcp on lo for tcp; MPI_Allreduce, MPI_Allgather,
           MPI_Reduce_scatter_block, MPI_Bcast (in place), MPI_Reduce, MPI_Alltoall); it checks
           its results and reports wall and CPU time from one run
  Gloo     all_reduce only: build/perf/gloo_allreduce_bench under weftrun (ring-chunked over
           Gloo's TCP transport, in place: Gloo has no out-of-place form; tcp only, Gloo has no
           shared-memory path)
On one host each system's ranks are placed alike: weftrun (weft, Gloo) and mpirun both bind each
rank to cores of its own by default while there are no more ranks than cores, and bind nothing
when the ranks outnumber them (mpirun --oversubscribe).
Sizes whose count rounds to 0 (all_gather, reduce_scatter, alltoall below 16 bytes a rank) are
left out.
Each size keeps its best time over the rounds (a shared VM stalls single runs). The memcpy
ceiling (build/perf/memcpy_bandwidth) is measured in the same run and printed above the tables.
Every sweep is bracketed by the cache-line round trip between the first two CPUs and run again
while the VM is in its slow placement phase (perf/vm_phase.py); the header says how many were
redone and how many were kept from that phase. --no-phase-check turns this off; --load does too
(the busy processes slow the round trip itself).
Printed: time (us) and busbw (GB/s) per system, MPI time / weft time (> 1: weft is faster), and
CPU time per call (us) beside the wall time. A competitor is left out, with a note, when its
benchmark was not built (libopenmpi-dev and openmpi-bin; libgloo-dev).
--load N keeps N busy processes (one core each) running through every sweep: ranks that share
their cores with a trainer's compute, as it looks to the scheduler.

--hosts H (root) spreads the ranks over H hosts made of network namespaces
(tests/netns/hosts_lib.sh, perf/compare_hosts.py; --ranks a multiple of H, rank 0 and the ranks
after it on host 0), their links shaped to --rate (a tc tbf rate: 1gbit, 10gbit) or not. Every
system then uses its network path between hosts and its shared memory inside one:
  tcp  weft WEFT_NET=tcp; Open MPI btl self,vader,tcp on eth0; Gloo's TCP transport on eth0
  ucx  weft WEFT_NET=ucx; Open MPI --mca pml ucx (both with UCX's own choice of transports)
--transports then names these (default tcp). iperf3's goodput between two hosts, both ways at
once, is measured beside the memcpy ceiling. --pin runs host i's processes on CPU i mod the
CPU count, for every system (hosts_lib.sh's HOSTS_PIN).
"""
import argparse
import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile

from compare_hosts import NamespaceHosts
from vm_phase import PhaseGuard

# --collective: (weft's tool, the table's name, reduces, rooted, busbw factor in words)
COLLECTIVES = {
    "all_reduce": ("all_reduce_perf", "all-reduce", True, False, "2(n-1)/n"),
    "all_gather": ("all_gather_perf", "all-gather", False, False, "(n-1)/n"),
    "reduce_scatter": ("reduce_scatter_perf", "reduce-scatter", True, False, "(n-1)/n"),
    "broadcast": ("broadcast_perf", "broadcast", False, True, "1"),
    "reduce": ("reduce_perf", "reduce", True, True, "1"),
    "alltoall": ("alltoall_perf", "all-to-all", False, False, "(n-1)/n"),
}

ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+\S+\s+\S+\s+-?\d+\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)")


def run(cmd, env=None, timeout=600):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if p.returncode != 0:
        sys.exit(f"compare.py: {' '.join(cmd)} failed ({p.returncode}):\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    return p.stdout


def weft_env(transport):
    """The environment weft's perf tools run in on one host: weft's own choices (no forced
    algorithm or tuning file), loopback for TCP, and WEFT_TRANSPORT=tcp for transport tcp."""
    env = dict(os.environ, NCCL_SOCKET_IFNAME="lo")
    for name in ("WEFT_ALGO", "NCCL_ALGO", "WEFT_TUNING_FILE"):
        env.pop(name, None)
    if transport == "tcp":
        env["WEFT_TRANSPORT"] = "tcp"
    return env


def perf_rows(output):
    """{size: (time_us, busbw)} from a perf tool's out-of-place columns (the same columns for
    every collective: size count type redop root time algbw busbw #wrong ...); sizes whose count
    is 0 are left out."""
    rows = {}
    for line in output.splitlines():
        m = ROW.match(line)
        if m and int(m.group(2)) > 0:
            rows[int(m.group(1))] = (float(m.group(3)), float(m.group(5)))
    return rows


def weft_sweep(build, collective, ranks, transport, sizes, cputime, hosts):
    """{size: (time_us, busbw)} from <collective>_perf (perf_rows)."""
    tool = [f"{build}/perf/{COLLECTIVES[collective][0]}", "-b", sizes.b, "-e", sizes.e, "-f", sizes.f,
            "-n", sizes.n, "-w", sizes.w, "-c", "0", "-C", "1" if cputime else "0"]
    if hosts:
        output = hosts.run_ranks(ranks // hosts.count, tool, {"WEFT_NET": transport, "WEFT_TIMEOUT": "120"})
    else:
        output = run([f"{build}/tools/weftrun", "-n", str(ranks), "--no-prefix", *tool], weft_env(transport))
    return perf_rows(output)


def bench_rows(output):
    """{size: (time_us, busbw, cpu_us)} from the competitors' benchmarks' lines
    (size count time_us algbw_GBps busbw_GBps cpu_us)."""
    rows = {}
    for line in output.splitlines():
        fields = line.split()
        if len(fields) == 6 and fields[0].isdigit():
            rows[int(fields[0])] = (float(fields[2]), float(fields[4]), float(fields[5]))
    return rows


def mpi_sweep(build, collective, ranks, transport, sizes, hosts):
    """{size: (time_us, busbw, cpu_us)} from mpi_collective_bench --collective COLLECTIVE."""
    bench = [f"{build}/perf/mpi_collective_bench", "--collective", collective, "-b", sizes.b, "-e", sizes.e,
             "-f", sizes.f, "-n", sizes.n, "-w", sizes.w]
    if hosts:
        path = ["--mca", "pml", "ucx", "--mca", "pml_ucx_tls", "any", "--mca", "pml_ucx_devices", "any"] \
            if transport == "ucx" else \
            ["--mca", "pml", "ob1", "--mca", "btl", "self,vader,tcp", "--mca", "btl_tcp_if_include", "eth0"]
        return bench_rows(hosts.mpirun(ranks // hosts.count, [*path, *bench]))
    btl = ["--mca", "btl", "self,vader"] if transport == "shm" else \
        ["--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo"]
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(ranks), "--mca", "pml", "ob1", *btl, *bench]
    return bench_rows(run(cmd))


def gloo_sweep(build, ranks, sizes, hosts):
    """{size: (time_us, busbw, cpu_us)} from gloo_allreduce_bench (its rendezvous in files, which
    every namespace host sees)."""
    with tempfile.TemporaryDirectory(prefix="weft-compare-gloo.") as store:
        bench = [f"{build}/perf/gloo_allreduce_bench", "--store", store, "-b", sizes.b, "-e", sizes.e,
                 "-f", sizes.f, "-n", sizes.n, "-w", sizes.w]
        if hosts:
            return bench_rows(hosts.run_ranks(ranks // hosts.count, [*bench, "--iface", "eth0"], {}))
        return bench_rows(run([f"{build}/tools/weftrun", "-n", str(ranks), "--no-prefix", *bench]))


def mpi_has_ucx():
    """Whether Open MPI has its UCX point-to-point layer (Debian's is built with it)."""
    p = subprocess.run(["ompi_info"], capture_output=True, text=True)
    return p.returncode == 0 and re.search(r"MCA pml: ucx\b", p.stdout) is not None


class BusyLoad:
    """N processes that spin until the block ends."""

    def __init__(self, count):
        self.count = count
        self.procs = []

    def __enter__(self):
        self.procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(self.count)]
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait()


def keep_best(best, rows):
    for size, values in rows.items():
        if size not in best or values[0] < best[size][0]:
            best[size] = values


def human(size):
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}iB"
    return f"{size} B"


def measure(args, build, transports, hosts, have_mpi, have_mpi_ucx, have_gloo, guard):
    """Every round's sweeps, the systems alternated, each through `guard`; ({transport: {size:
    best}} for weft's time, weft's CPU time, and {system: {transport: {size: best}}} for the
    others)."""
    weft = {t: {} for t in transports}
    weft_cpu = {t: {} for t in transports}
    others = {"MPI": {t: {} for t in transports}, "Gloo": {t: {} for t in transports}}
    for r in range(args.rounds):
        with BusyLoad(args.load):
            for t in transports:
                order = ["weft", "MPI", "Gloo"]
                order = order[r % 3:] + order[:r % 3]  # each system goes first in turn
                for system in order:
                    if system == "weft":
                        keep_best(weft[t], guard.measure(
                            lambda: weft_sweep(build, args.collective, args.ranks, t, args, False, hosts)))
                        keep_best(weft_cpu[t], guard.measure(
                            lambda: weft_sweep(build, args.collective, args.ranks, t, args, True, hosts)))
                    elif system == "MPI" and (have_mpi_ucx if t == "ucx" else have_mpi):
                        keep_best(others["MPI"][t], guard.measure(
                            lambda: mpi_sweep(build, args.collective, args.ranks, t, args, hosts)))
                    elif system == "Gloo" and have_gloo and t == "tcp":
                        keep_best(others["Gloo"][t], guard.measure(lambda: gloo_sweep(build, args.ranks, args, hosts)))
    return weft, weft_cpu, others


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build")
    parser.add_argument("--collective", default="all_reduce", choices=list(COLLECTIVES),
                        help="the collective compared (default all_reduce)")
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--transports", help="shm,tcp on one host (the default); tcp,ucx across --hosts "
                        "(default tcp)")
    parser.add_argument("-b", default="8")
    parser.add_argument("-e", default="64M")
    parser.add_argument("-f", default="8")
    parser.add_argument("-n", default="20")
    parser.add_argument("-w", default="5")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--load", type=int, default=0, help="busy processes running beside the ranks")
    parser.add_argument("--hosts", type=int, default=0, help="namespace hosts the ranks spread over (root)")
    parser.add_argument("--rate", default="", help="with --hosts: every link shaped to this tc tbf rate")
    parser.add_argument("--pin", action="store_true", help="with --hosts: host i's processes on CPU i")
    parser.add_argument("--no-phase-check", action="store_true",
                        help="keep sweeps run in the VM's slow placement phase (see above)")
    args = parser.parse_args()
    build = os.path.abspath(args.build)
    known = ("tcp", "ucx") if args.hosts else ("shm", "tcp")
    transports = [t for t in (args.transports or ("tcp" if args.hosts else "shm,tcp")).split(",") if t]
    for t in transports:
        if t not in known:
            sys.exit(f"compare.py: --transports: unknown transport '{t}' ({', '.join(known)}"
                     f"{' across --hosts' if args.hosts else ' on one host'})")
    if args.hosts < 0 or (args.hosts and args.ranks % args.hosts):
        sys.exit(f"compare.py: --ranks {args.ranks} is not a multiple of --hosts {args.hosts}")
    if (args.rate or args.pin) and not args.hosts:
        sys.exit("compare.py: --rate and --pin shape and place namespace hosts: they need --hosts")
    tool, label, reduces, rooted, factor = COLLECTIVES[args.collective]
    if not os.access(f"{build}/perf/{tool}", os.X_OK):
        sys.exit(f"compare.py: {build}/perf/{tool} is missing (build it: ninja -C BUILD_DIR {tool})")
    have_mpi = shutil.which("mpirun") and os.access(f"{build}/perf/mpi_collective_bench", os.X_OK)
    have_gloo = os.access(f"{build}/perf/gloo_allreduce_bench", os.X_OK)
    if have_mpi and "ucx" in transports and not mpi_has_ucx():
        print("# Open MPI over UCX: not measured (this Open MPI has no pml ucx)")
        have_mpi_ucx = False
    else:
        have_mpi_ucx = have_mpi
    gloo_measures = args.collective == "all_reduce"  # Gloo's side is its all-reduce only

    ceiling = run([f"{build}/perf/memcpy_bandwidth"]).strip()
    goodput = None
    with (NamespaceHosts(args.hosts, args.rate, args.pin) if args.hosts else contextlib.nullcontext()) as hosts:
        if hosts and args.hosts >= 2:
            goodput = hosts.goodput()
        guard = PhaseGuard(build, "--load: the busy processes slow the round trip itself" if args.load else
                           "--no-phase-check" if args.no_phase_check else None)
        weft, weft_cpu, others = measure(args, build, transports, hosts, have_mpi, have_mpi_ucx,
                                         have_gloo and gloo_measures, guard)

    kind = "float sum" if reduces else "float"
    if rooted:
        kind += ", root 0"
    place = "out of place" + (" (MPI_Bcast in place)" if args.collective == "broadcast" else "") + \
        (" (Gloo in place)" if gloo_measures and have_gloo and "tcp" in transports else "")
    where = ""
    if args.hosts:
        where = f" on {args.hosts} namespace hosts ({args.ranks // args.hosts} a host; links " + \
            (f"shaped to {args.rate}" if args.rate else "unshaped veth") + ("; host i on CPU i" if args.pin else "") + ")"
    print(f"# {label}, {args.ranks} ranks{where}, {kind}, {place}, busbw = algbw * {factor}; best of {args.rounds} "
          "alternated rounds" + (f"; {args.load} busy processes beside the ranks" if args.load else ""))
    print("\n".join(ceiling.splitlines()))
    print(guard.summary())
    if args.hosts >= 2:
        print(f"# iperf3 --bidir goodput between two hosts (slower direction): {goodput:.3f} GB/s" if goodput
              else "# iperf3: not measured (not installed)")
    if not have_mpi:
        print("# Open MPI: not measured (mpirun or build/perf/mpi_collective_bench missing: openmpi-bin, "
              "libopenmpi-dev)")
    if not gloo_measures:
        print(f"# Gloo: not measured for {args.collective}")
    elif not have_gloo:
        print("# Gloo: not measured (build/perf/gloo_allreduce_bench missing: libgloo-dev)")
    for t in transports:
        title = {"shm": "shm", "tcp": "tcp (loopback)"}[t] if not args.hosts else \
            f"{t} between hosts (shared memory inside one)"
        print(f"\n## {title}\n")
        shown = [name for name, rows in others.items() if rows[t]]
        header = ["size", "weft us", "weft busbw", "weft CPU us/call"]
        for name in shown:
            header += [f"{name} us", f"{name} busbw", f"{name} CPU us/call", f"{name} time / weft time"]
        print("| " + " | ".join(header) + " |")
        print("|" + "|".join("---:" for _ in header) + "|")
        for size in sorted(weft[t]):
            w = weft[t][size]
            cpu = weft_cpu[t].get(size, (float("nan"),))[0]
            cells = [human(size), f"{w[0]:.2f}", f"{w[1]:.2f}", f"{cpu:.2f}"]
            for name in shown:
                m = others[name][t].get(size)
                cells += [f"{m[0]:.2f}", f"{m[1]:.2f}", f"{m[2]:.2f}", f"{m[0] / w[0]:.2f}"] if m else ["-"] * 4
            print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
