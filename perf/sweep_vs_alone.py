#!/usr/bin/env python3
"""Is a size slower inside a sweep than run alone? (issue 14: "no size where a later sweep step is
slower than the same size run alone by more than noise").

Usage: sweep_vs_alone.py BUILD_DIR [--tool all_reduce_perf] [--ranks 2] [--transport shm|tcp]
                         [-b 8] [-e 64M] [-f 8] [-n 20] [-w 5] [-R 0|1] [--rounds 7] [--pin]

Each round runs the sweep once (-b B -e E -f F) and every size of it alone (-b S -e S), in an
order that alternates from round to round, all under weftrun with -c 0 and the same -n/-w
(the perf tools warm up at their largest size first, so inside the sweep every size follows a
warm-up at E). Printed per size: the out-of-place time's median and range over the rounds,
inside the sweep and alone, and their ratio. A size is flagged when every round's sweep time
is above every round's time alone and the medians differ by more than 10%: slower than the
spread of the runs alone. -R 1: ncclMemAlloc'd buffers (the direct all-reduce from 1 MiB). With R rounds, runs of equal speed order themselves that way with
probability 1/C(2R, R) (1/20 at 3 rounds: with 8 sizes one flag in three runs is chance; 1/3432
at 7), so use 7 rounds (the default) before calling a size slow. --transport tcp runs WEFT_TRANSPORT=tcp on loopback; --pin puts
rank r on CPU r mod the CPU count (Open MPI's default binding), to tell placement effects apart.
"""
import argparse
import math
import os
import statistics
import sys

from compare import perf_rows, run, weft_env


def parse_size(text):
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * scale[text[-1].upper()] if text[-1].upper() in scale else int(text)


def times(build, args, first, last):
    """{size: out-of-place time in us} of one run of the tool from FIRST to LAST bytes."""
    tool = [f"{build}/perf/{args.tool}", "-b", str(first), "-e", str(last), "-f", args.f, "-n", args.n, "-w", args.w,
            "-c", "0", "-R", args.R]
    if args.pin:
        tool = ["sh", "-c", f'exec taskset -c $((LOCAL_RANK % {os.cpu_count()})) "$@"', "sh", *tool]
    output = run([f"{build}/tools/weftrun", "-n", str(args.ranks), "--no-prefix", *tool], weft_env(args.transport),
                 timeout=900)
    return {size: row[0] for size, row in perf_rows(output).items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build")
    parser.add_argument("--tool", default="all_reduce_perf")
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--transport", default="shm", choices=["shm", "tcp"])
    parser.add_argument("-b", default="8")
    parser.add_argument("-e", default="64M")
    parser.add_argument("-f", default="8")
    parser.add_argument("-n", default="20")
    parser.add_argument("-w", default="5")
    parser.add_argument("-R", default="0", choices=["0", "1"], help="1: ncclMemAlloc'd buffers")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--pin", action="store_true")
    args = parser.parse_args()
    build = os.path.abspath(args.build)
    first, last = parse_size(args.b), parse_size(args.e)

    sizes, size = [], first
    while size <= last:  # the perf tools' steps: -b, times -f, up to -e
        sizes.append(size)
        size *= int(args.f)
    sizes = [s for s in sizes if s in times(build, args, s, s)]  # not those the tool leaves out (count 0)
    sweep, alone = {}, {}
    for r in range(args.rounds):
        swept = times(build, args, first, last) if r % 2 == 0 else None  # the sweep first, then last
        for size in sizes if r % 2 == 0 else reversed(sizes):
            alone.setdefault(size, []).append(times(build, args, size, size)[size])
        swept = swept or times(build, args, first, last)
        for size in sizes:
            sweep.setdefault(size, []).append(swept[size])

    print(f"# {args.tool}, {args.ranks} ranks, {args.transport}{', pinned' if args.pin else ''}{', ncclMemAlloc' if args.R == '1' else ''}: out-of-place time "
          f"(us) inside the sweep -b {args.b} -e {args.e} -f {args.f} and alone, {args.rounds} alternated rounds, "
          f"-n {args.n} -w {args.w} -c 0")
    print("| size | sweep median | sweep range | alone median | alone range | sweep / alone | slower than the spread |")
    print("|---:|---:|---:|---:|---:|---:|---|")
    flagged = 0
    for size in sizes:
        s, a = sweep[size], alone[size]
        ratio = statistics.median(s) / statistics.median(a)
        slower = min(s) > max(a) and ratio > 1.1
        flagged += slower
        print(f"| {size} | {statistics.median(s):.2f} | {min(s):.2f}-{max(s):.2f} | {statistics.median(a):.2f} | "
              f"{min(a):.2f}-{max(a):.2f} | {ratio:.2f} | {'yes' if slower else ''} |")
    print(f"# {flagged} size(s) slower inside the sweep than the spread of the runs alone (each such flag "
          f"arises by chance with probability 1/{math.comb(2 * args.rounds, args.rounds)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
