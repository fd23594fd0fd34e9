#!/usr/bin/env python3
"""PyTorch DistributedDataParallel on weft: 2 processes train a small model for a few steps and
print their losses as JSON, after checking four collectives against values computed here.

    LD_PRELOAD=<build>/libnccl.so.2 python3 tests/gpu/ddp_check.py --backend nccl --device cuda
    python3 tests/gpu/ddp_check.py --backend gloo --device cpu          # the reference run

With --backend nccl both processes share GPU 0 (NCCL refuses that; weft allows it), and the
script reports which libnccl.so.2 the processes mapped, so a run that silently used another
NCCL is caught (--expect-nccl PATH makes that a failure). gpu-check.sh runs both and compares
the losses (--compare A B). Needs nothing from the network: the processes meet through a file.
"""
import argparse
import json
import os
import sys
import tempfile
import time


def mapped_nccl():
    """Every libnccl.so* this process mapped (torch may also open its own by full path)."""
    found = set()
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1]
                if os.path.basename(path).startswith("libnccl.so"):
                    found.add(os.path.realpath(path))
    except OSError:
        pass
    return sorted(found)


def check_collectives(dist, torch, rank, world, device):
    """Each collective on tensors whose right result is known; returns a list of failures."""
    failures = []
    n = 1000
    base = torch.arange(n, dtype=torch.float32, device=device)

    x = base + rank
    dist.all_reduce(x)
    want = base * world + sum(range(world))
    if not torch.equal(x, want):
        failures.append("all_reduce")

    y = base * (rank + 1)
    dist.broadcast(y, src=1)
    if not torch.equal(y, base * 2):
        failures.append("broadcast")

    gathered = torch.empty(world * n, dtype=torch.float32, device=device)
    dist.all_gather_into_tensor(gathered, base + 10 * rank)
    if not torch.equal(gathered, torch.cat([base + 10 * r for r in range(world)])):
        failures.append("all_gather_into_tensor")

    full = torch.arange(world * n, dtype=torch.float32, device=device) + rank
    part = torch.empty(n, dtype=torch.float32, device=device)
    dist.reduce_scatter_tensor(part, full)
    mine = torch.arange(rank * n, (rank + 1) * n, dtype=torch.float32, device=device)
    if not torch.equal(part, mine * world + sum(range(world))):
        failures.append("reduce_scatter_tensor")
    return failures


def train(rank, world, args, init_file, result_file):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device("cuda", 0) if args.device == "cuda" else torch.device("cpu")
    if args.device == "cuda":
        torch.cuda.set_device(0)
    # device_id= binds the group to the GPU at once (torch >= 2.3); older versions lack it.
    import inspect
    accepts_device = "device_id" in inspect.signature(dist.init_process_group).parameters
    kwargs = {"device_id": device} if args.device == "cuda" and accepts_device else {}
    dist.init_process_group(args.backend, init_method="file://" + init_file, rank=rank, world_size=world, **kwargs)

    # The reference run (gloo) checks nothing: gloo lacks reduce_scatter in some versions.
    failures = check_collectives(dist, torch, rank, world, device) if args.device == "cuda" else []

    torch.manual_seed(1234)  # the same initial weights on every rank and in every run
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.Tanh(), torch.nn.Linear(128, 10)).to(device)
    ddp = DistributedDataParallel(model, device_ids=[0] if args.device == "cuda" else None)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(100 + rank)  # each rank its own batches, on the CPU
    teacher = torch.randn(64, 10, generator=torch.Generator().manual_seed(7))  # labels worth learning
    losses = []
    for _ in range(args.steps):
        batch = torch.randn(32, 64, generator=data)
        inputs, labels = batch.to(device), (batch @ teacher).argmax(dim=1).to(device)
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(ddp(inputs), labels)
        loss.backward()
        optimizer.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        losses.append(mean.item() / world)
    if args.device == "cuda":
        torch.cuda.synchronize()
    weights = sum(p.detach().double().sum().item() for p in model.parameters())
    result = {"rank": rank, "backend": args.backend, "device": args.device, "nccl": mapped_nccl(),
              "failures": failures, "losses": losses, "weight_sum": weights}
    with open(result_file, "w") as out:
        json.dump(result, out)
    dist.destroy_process_group()


def run(args):
    import torch.multiprocessing as mp

    world = 2
    with tempfile.TemporaryDirectory() as scratch:
        init_file = os.path.join(scratch, "init")
        results = [os.path.join(scratch, f"rank{r}.json") for r in range(world)]
        context = mp.start_processes(_entry, args=(world, args, init_file, results), nprocs=world, join=False,
                                     start_method="spawn")
        started = time.monotonic()
        while not context.join(timeout=1):
            if time.monotonic() - started > args.timeout:
                for process in context.processes:
                    process.kill()
                print(f"the processes did not finish within {args.timeout:.0f} s", file=sys.stderr)
                return 1
        ranks = [json.load(open(path)) for path in results]
    ok = True
    for r in ranks:
        if r["failures"]:
            print(f"rank {r['rank']}: wrong results from {', '.join(r['failures'])}", file=sys.stderr)
            ok = False
        if args.expect_nccl and r["nccl"] != [os.path.realpath(args.expect_nccl)]:
            print(f"rank {r['rank']}: mapped {r['nccl'] or 'no libnccl'}, not only {args.expect_nccl}", file=sys.stderr)
            ok = False
    if ranks[0]["losses"] != ranks[1]["losses"] or ranks[0]["weight_sum"] != ranks[1]["weight_sum"]:
        print("the ranks disagree on the losses or the weights after training", file=sys.stderr)
        ok = False
    summary = {k: ranks[0][k] for k in ("backend", "device", "nccl", "losses", "weight_sum")}
    print(json.dumps(summary))
    return 0 if ok else 1


def _entry(rank, world, args, init_file, results):
    train(rank, world, args, init_file, results[rank])


def compare(a_path, b_path, tolerance):
    """Two runs' losses step by step: equal within `tolerance` (relative), since CPU and GPU
    arithmetic round differently; returns the exit status."""
    a, b = (json.loads(open(p).read().strip().splitlines()[-1]) for p in (a_path, b_path))
    worst = max(abs(x - y) / max(abs(y), 1e-12) for x, y in zip(a["losses"], b["losses"]))
    same_length = len(a["losses"]) == len(b["losses"])
    print(f"{a['backend']}/{a['device']} ({', '.join(a['nccl']) or 'no libnccl'}) against {b['backend']}/{b['device']}: "
          f"{len(a['losses'])} steps, loss {a['losses'][0]:.6f} -> {a['losses'][-1]:.6f} against "
          f"{b['losses'][0]:.6f} -> {b['losses'][-1]:.6f}, largest relative difference {worst:.2e} "
          f"(tolerance {tolerance:.0e})")
    return 0 if same_length and worst <= tolerance else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="nccl")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=120, help="seconds the processes may take in all")
    parser.add_argument("--expect-nccl", help="fail unless the processes mapped this libnccl.so.2")
    parser.add_argument("--compare", nargs=2, metavar=("RUN", "REFERENCE"), help="compare two runs' outputs")
    parser.add_argument("--tolerance", type=float, default=1e-3)
    args = parser.parse_args()
    if args.compare:
        return compare(*args.compare, args.tolerance)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
