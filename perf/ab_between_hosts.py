#!/usr/bin/env python3
"""Environment variants of weft's all-reduce across namespace hosts, alternated: an A/B tool.

Usage: ab_between_hosts.py BUILD_DIR [--size 16M] [--rounds 6] [--hosts 2] [--rate RATE]
                           [-n 30] [-w 5] LABEL=NAME=VALUE[,NAME=VALUE...] ...

Each variant is one all_reduce_perf size (out of place, -c 0) run as one rank per namespace
host (tests/netns/hosts_lib.sh through perf/compare_hosts.py), each host pinned to its own CPU,
with the variant's settings added to every rank's environment. Rounds alternate the variants
and rotate which goes first; every run is bracketed by the VM's placement phase and run again
in its slow phase (perf/vm_phase.py). Printed: each round's busbw per variant, then each
variant's median, min and max, and its median over the first variant's. A variant may point
LD_LIBRARY_PATH at a directory with another libweft.so.0 (an A/B of the library).
Example (UCX's segment sizes, docs/performance.md):
  ab_between_hosts.py build --size 64M tcp=WEFT_NET=tcp ucx=WEFT_NET=ucx \\
      ucx8k=WEFT_NET=ucx,UCX_TCP_TX_SEG_SIZE=8K,UCX_TCP_RX_SEG_SIZE=64K
"""
import argparse
import os
import statistics
import sys

from compare import perf_rows
from compare_hosts import NamespaceHosts
from vm_phase import PhaseGuard


def variant(text):
    label, _, settings = text.partition("=")
    if not label or not settings:
        raise argparse.ArgumentTypeError(f"'{text}': expected LABEL=NAME=VALUE[,NAME=VALUE...]")
    env = {}
    for pair in settings.split(","):
        name, eq, value = pair.partition("=")
        if not eq or not name or " " in value:
            raise argparse.ArgumentTypeError(f"'{pair}' in '{text}': expected NAME=VALUE without spaces")
        env[name] = value
    return label, env


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build")
    parser.add_argument("variants", nargs="+", type=variant)
    parser.add_argument("--size", default="16M")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--hosts", type=int, default=2)
    parser.add_argument("--rate", default="", help="every link shaped to this tc tbf rate (default: unshaped)")
    parser.add_argument("-n", default="30")
    parser.add_argument("-w", default="5")
    args = parser.parse_args()
    build = os.path.abspath(args.build)
    tool = [f"{build}/perf/all_reduce_perf", "-b", args.size, "-e", args.size, "-n", args.n, "-w", args.w, "-c", "0"]
    guard = PhaseGuard(build)
    busbw = {label: [] for label, _ in args.variants}
    with NamespaceHosts(args.hosts, args.rate, True) as hosts:
        for r in range(args.rounds):
            shift = r % len(args.variants)
            for label, env in args.variants[shift:] + args.variants[:shift]:
                rows = perf_rows(guard.measure(lambda: hosts.run_ranks(1, tool, dict(env, WEFT_TIMEOUT="120"))))
                if not rows:
                    sys.exit(f"ab_between_hosts.py: {label}: all_reduce_perf printed no row")
                busbw[label].append(rows[max(rows)][1])
            print(f"round {r}: " + "  ".join(f"{label} {values[-1]:.2f}" for label, values in busbw.items()), flush=True)
    print(f"# all-reduce of {args.size}, {args.hosts} namespace hosts, one pinned rank each, links "
          f"{'shaped to ' + args.rate if args.rate else 'unshaped'}; busbw in GB/s over {args.rounds} alternated rounds")
    print(guard.summary())
    first = statistics.median(busbw[args.variants[0][0]])
    print("| variant | median | min | max | median / first's |")
    print("|---|---:|---:|---:|---:|")
    for label, values in busbw.items():
        median = statistics.median(values)
        print(f"| {label} | {median:.2f} | {min(values):.2f} | {max(values):.2f} | {median / first:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
