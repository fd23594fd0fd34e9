"""Data-parallel training through torch.distributed backend "weft", one run per (seed, mode):
DDP with no hook (exact all-reduce), with weft's compression hook (fp16, bf16, int8, int4,
top-k 1% and 0.1%, sign; with or without error feedback), or with PyTorch's PowerSGD hook
(rank 2, error feedback on) as the peer to beat. The first `warmup` steps are uncompressed.

Records, every `eval_every` steps: the mean training loss since the last record, the task's
evaluation (test accuracy; for logreg the suboptimality f - f*), the bytes this rank has sent
for gradients (exact all-reduces: 2(n-1)/n of their payload; weft's codecs: their encoded
size, weft_torch.wire_bytes; PowerSGD: its exact all-reduces), and the training wall time.
"""

import datetime
import multiprocessing
import os
import tempfile
import time
import traceback

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook

import weft_torch
from tasks import TASKS

MODES = {
    "none": None,
    "fp16": {"codec": "fp16", "error_feedback": False},
    "bf16": {"codec": "bf16", "error_feedback": False},
    "int8": {"codec": "int8", "error_feedback": False},
    "int4": {"codec": "int4", "error_feedback": False},
    "topk1": {"codec": "topk", "topk_ratio": 0.01, "error_feedback": False},
    "topk1_ef": {"codec": "topk", "topk_ratio": 0.01, "error_feedback": True},
    "topk0.1": {"codec": "topk", "topk_ratio": 0.001, "error_feedback": False},
    "topk0.1_ef": {"codec": "topk", "topk_ratio": 0.001, "error_feedback": True},
    "sign": {"codec": "sign", "error_feedback": False},
    "sign_ef": {"codec": "sign", "error_feedback": True},
    "powersgd": "powersgd",
}


def exact_average(bucket):
    tensor = bucket.buffer()
    work = dist.all_reduce(tensor.div_(dist.get_world_size()), async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])


def attach(ddp, mode, warmup, seed):
    """Registers the mode's hook; returns a function giving the bytes its codec sent so far."""
    spec = MODES[mode]
    if spec is None:
        return lambda: 0
    if spec == "powersgd":
        state = powerSGD_hook.PowerSGDState(process_group=None, matrix_approximation_rank=2,
                                            start_powerSGD_iter=max(warmup, 2), use_error_feedback=True,
                                            warm_start=True, random_seed=seed)
        ddp.register_comm_hook(state, powerSGD_hook.powerSGD_hook)
        return lambda: 0  # its all-reduces are exact ones: the backend counts them
    hook = weft_torch.compression_hook(seed=seed, **spec)
    steps = {"done": 0}

    def warmed(state, bucket):
        future = exact_average(bucket) if steps["done"] < warmup else hook(state, bucket)
        if bucket.is_last():
            steps["done"] += 1
        return future

    ddp.register_comm_hook(None, warmed)
    return lambda: hook.state.wire_bytes


def train_one(task, mode, rank, world, steps, seed, warmup, eval_every):
    group = dist.group.WORLD
    model = task.model(seed)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    codec_bytes = attach(ddp, mode, warmup, seed)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=task.lr, momentum=task.momentum)
    decay = task.lr_halving_steps
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0 / (1.0 + s / decay) if decay else 1.0)
    x_shard, y_shard = task.shard(rank, world)
    g = torch.Generator().manual_seed(seed * 7919 + rank)
    payload0 = weft_torch.all_reduce_payload_bytes(group)
    ring = 2 * (world - 1) / world
    records, losses = [], []
    train_seconds = 0.0
    for step in range(steps + 1):
        if step % eval_every == 0 or step == steps:
            record = {"step": step, "train_loss": sum(losses) / len(losses) if losses else float("nan"),
                      "bytes_per_rank": ring * (weft_torch.all_reduce_payload_bytes(group) - payload0)
                      + codec_bytes(), "wall_s": train_seconds}
            if rank == 0:
                record.update(task.evaluate(model, final=step == steps))
            records.append(record)
            losses = []
        if step == steps:
            break
        start = time.perf_counter()
        index = torch.randint(len(x_shard), (task.batch,), generator=g)
        optimizer.zero_grad()
        loss = task.loss(ddp, model, x_shard[index], y_shard[index])
        loss.backward()
        optimizer.step()
        schedule.step()
        train_seconds += time.perf_counter() - start
        losses.append(float(loss))
    dist.barrier()
    return records


def rank_main(rank, world, store_path, task_name, modes, seeds, steps, warmup, eval_every, results):
    try:
        torch.set_num_threads(1)
        dist.init_process_group("weft", store=dist.FileStore(store_path, world), rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=300))
        task = TASKS[task_name](0)
        for seed in seeds:
            for mode in modes:
                records = train_one(task, mode, rank, world, steps, seed, warmup, eval_every)
                if rank == 0:
                    results.put(("run", task_name, mode, seed, records))
        dist.destroy_process_group()
        results.put(("done", rank))
    except BaseException:
        results.put(("error", rank, traceback.format_exc()))


def run_task(task_name, modes, seeds, world, steps, warmup, eval_every, on_run):
    """Trains every (seed, mode) of one task on `world` rank processes; on_run(task, mode, seed,
    records) receives each run as it finishes."""
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    with tempfile.TemporaryDirectory() as tmp:
        args = (world, os.path.join(tmp, "store"), task_name, modes, seeds, steps, warmup, eval_every, results)
        procs = [ctx.Process(target=rank_main, args=(r,) + args) for r in range(world)]
        for p in procs:
            p.start()
        done = 0
        while done < world:
            message = results.get(timeout=3600)
            if message[0] == "run":
                on_run(*message[1:])
            elif message[0] == "done":
                done += 1
            else:
                for p in procs:
                    p.kill()
                raise RuntimeError(f"rank {message[1]} failed:\n{message[2]}")
        for p in procs:
            p.join()
