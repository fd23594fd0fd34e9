"""torch.distributed with backend "weft" beside "gloo", in one run on the same rank processes:
all_reduce of float32 tensors from 8 B to 64 MiB (time and bus bandwidth, as nccl-tests counts
it), and the step time of a DDP-trained MLP (256-512-512-10, batch 64, one thread per rank)
with each backend and without DDP, whose difference is DDP's communication overhead.

    PYTHONPATH=build/python /usr/bin/python3 perf/pytorch/bench_torch_backends.py --ranks 2 4

Prints a markdown table per world size (docs/pytorch.md keeps them) and, with --json, the
figures as JSON.
"""

import argparse
import datetime
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist

import weft_torch  # noqa: F401


def sizes(max_bytes):
    """8 B, then 16 B times powers of 4 up to max_bytes (64 MiB by default)."""
    yield 8
    s = 16
    while s <= max_bytes:
        yield s
        s *= 4


def time_all_reduce(tensor, group, iterations):
    for _ in range(max(2, iterations // 10)):
        dist.all_reduce(tensor, group=group)
    dist.barrier(group=group)
    start = time.perf_counter()
    for _ in range(iterations):
        dist.all_reduce(tensor, group=group)
    return (time.perf_counter() - start) / iterations


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(),
                               torch.nn.Linear(512, 10))


def time_steps(model, steps, rank):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(64, 256, generator=g)
    y = torch.randint(0, 10, (64,), generator=g)

    def step():
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()

    for _ in range(5):
        step()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def rank_main(rank, n, store_path, max_bytes, steps, results):
    torch.set_num_threads(1)
    store = dist.FileStore(store_path, n)
    dist.init_process_group("weft", store=store, rank=rank, world_size=n, timeout=datetime.timedelta(seconds=120))
    groups = {"weft": dist.group.WORLD, "gloo": dist.new_group(list(range(n)), backend="gloo")}
    rows = []
    for size in sizes(max_bytes):
        tensor = torch.ones(size // 4 if size >= 4 else 1)
        iterations = max(5, min(1000, int(2e8 // max(size, 1 << 14))))
        row = {"bytes": size}
        for name, group in groups.items():
            seconds = time_all_reduce(tensor, group, iterations)
            row[name + "_us"] = seconds * 1e6
            row[name + "_busbw"] = (2 * (n - 1) / n) * size / seconds / 1e9 if n > 1 else 0.0
        rows.append(row)
    ddp = {"local_ms": time_steps(mlp(), steps, rank) * 1e3}
    for name, group in groups.items():
        dist.barrier(group=group)
        model = torch.nn.parallel.DistributedDataParallel(mlp(), process_group=group)
        ddp[name + "_ms"] = time_steps(model, steps, rank) * 1e3
    dist.barrier()
    if rank == 0:
        results.put({"ranks": n, "all_reduce": rows, "ddp": ddp})
    dist.destroy_process_group()


def run(n, max_bytes, steps):
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    with tempfile.TemporaryDirectory() as tmp:
        procs = [ctx.Process(target=rank_main, args=(r, n, os.path.join(tmp, "store"), max_bytes, steps, results))
                 for r in range(n)]
        for p in procs:
            p.start()
        result = results.get(timeout=1800)
        for p in procs:
            p.join(timeout=60)
    return result


def human(b):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= scale:
            return f"{b // scale} {unit}"
    return f"{b} B"


def table(result):
    n = result["ranks"]
    lines = [f"### {n} ranks", "", "| size | weft us | gloo us | weft busbw GB/s | gloo busbw GB/s | weft / gloo |",
             "| ---: | ---: | ---: | ---: | ---: | ---: |"]
    for row in result["all_reduce"]:
        lines.append(f"| {human(row['bytes'])} | {row['weft_us']:.1f} | {row['gloo_us']:.1f} | "
                     f"{row['weft_busbw']:.2f} | {row['gloo_busbw']:.2f} | {row['gloo_us'] / row['weft_us']:.1f}x |")
    d = result["ddp"]
    over_weft, over_gloo = d["weft_ms"] - d["local_ms"], d["gloo_ms"] - d["local_ms"]
    lines += ["", "| DDP step (median) | no DDP | weft | gloo |", "| --- | ---: | ---: | ---: |",
              f"| step ms | {d['local_ms']:.2f} | {d['weft_ms']:.2f} | {d['gloo_ms']:.2f} |",
              f"| overhead ms (step - no DDP) | | {over_weft:.2f} | {over_gloo:.2f} |", ""]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--max-bytes", type=int, default=64 << 20)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()
    results = []
    for n in args.ranks:
        result = run(n, args.max_bytes, args.steps)
        results.append(result)
        print(table(result), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
