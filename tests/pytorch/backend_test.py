"""torch.distributed backend "weft" against the real thing: every operation on CPU tensors of
every dtype torch maps to NCCL types, checked against a float64 reference computed from the
seeded inputs of every rank, and against gloo's result where gloo supports the operation (a
gloo group of the same processes, created with new_group); DDP trained with weft and with gloo
from the same seed ends with the same parameters; a rank that dies gives the others an
exception, not a hang.

Run with Debian's Python (/usr/bin/python3) and PYTHONPATH=<build>/python:
    python3 tests/pytorch/backend_test.py BackendOps.test_two_ranks
"""

import datetime
import multiprocessing
import os
import socket
import sys
import tempfile
import time
import traceback
import unittest

import torch
import torch.distributed as dist

import weft_torch  # noqa: F401  (registers backend "weft")

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.int8,
          torch.uint8]
FLOATS = {torch.float32, torch.float64, torch.float16, torch.bfloat16}
GLOO_DTYPES = {torch.float32, torch.float64, torch.float16, torch.int32, torch.int64, torch.int8, torch.uint8}


def rank_input(rank, numel, dtype, seed):
    """Rank `rank`'s input: small integers, exact in every dtype, and so are their sums and
    products over up to 4 ranks."""
    g = torch.Generator().manual_seed(seed * 1009 + rank)
    low = 0 if dtype == torch.uint8 else -2
    return torch.randint(low, 3, (numel,), generator=g, dtype=torch.int64).to(dtype)


def reference(op, inputs):
    """The reduction of every rank's input, in float64."""
    stacked = torch.stack([t.double() for t in inputs])
    if op == "sum":
        return stacked.sum(0)
    if op == "product":
        return stacked.prod(0)
    if op == "min":
        return stacked.min(0).values
    if op == "max":
        return stacked.max(0).values
    if op == "avg":
        return stacked.mean(0)
    if op == "premul":
        return (stacked * 0.5).sum(0)
    raise ValueError(op)


def torch_op(op):
    return {"sum": dist.ReduceOp.SUM, "product": dist.ReduceOp.PRODUCT, "min": dist.ReduceOp.MIN,
            "max": dist.ReduceOp.MAX, "avg": dist.ReduceOp.AVG}.get(op) or dist._make_nccl_premul_sum(0.5)


class Failures:
    def __init__(self, rank):
        self.rank = rank
        self.messages = []

    def expect(self, actual, expected, what, tolerance=0.0):
        actual = actual.double().reshape(-1)
        expected = expected.double().reshape(-1)
        if actual.shape != expected.shape:
            self.messages.append(f"rank {self.rank} {what}: shape {tuple(actual.shape)} != {tuple(expected.shape)}")
            return
        wrong = (actual - expected).abs() > tolerance + tolerance * expected.abs()
        if bool(wrong.any()):
            i = int(wrong.nonzero()[0])
            self.messages.append(f"rank {self.rank} {what}: {int(wrong.sum())} wrong, first at {i}: "
                                 f"{float(actual[i])} != {float(expected[i])}")


def tolerance_of(dtype, op):
    if op in ("avg", "premul"):
        return {torch.float16: 1e-3, torch.bfloat16: 8e-3}.get(dtype, 1e-6)
    return 0.0


def check_operations(rank, n, gloo, f):
    """Every operation, every dtype; `gloo` is a gloo group of the same ranks."""
    seed = 10
    for dtype in DTYPES:
        seed += 1
        numel = 1003
        ops = ["sum", "product", "min", "max"] + (["avg", "premul"] if dtype in FLOATS else [])
        for op in ops:
            t = rank_input(rank, numel, dtype, seed)
            work = dist.all_reduce(t, op=torch_op(op), async_op=True)
            work.wait()
            expected = reference(op, [rank_input(r, numel, dtype, seed) for r in range(n)])
            if op == "avg" and dtype not in FLOATS:
                expected = expected.trunc()
            f.expect(t, expected, f"all_reduce {op} {dtype}", tolerance_of(dtype, op))
            if dtype in GLOO_DTYPES and op in ("sum", "product", "min", "max"):
                g = rank_input(rank, numel, dtype, seed)
                dist.all_reduce(g, op=torch_op(op), group=gloo)
                f.expect(t, g, f"all_reduce {op} {dtype} against gloo")
        # all_reduce_coalesced
        a, b = rank_input(rank, 17, dtype, seed), rank_input(rank, 300, dtype, seed + 1)
        dist.all_reduce_coalesced([a, b])
        f.expect(a, reference("sum", [rank_input(r, 17, dtype, seed) for r in range(n)]), f"coalesced {dtype} a")
        f.expect(b, reference("sum", [rank_input(r, 300, dtype, seed + 1) for r in range(n)]), f"coalesced {dtype} b")
        # broadcast and reduce
        root = n - 1
        on_gloo = dtype in GLOO_DTYPES
        t = rank_input(rank, numel, dtype, seed)
        dist.broadcast(t, src=root)
        f.expect(t, rank_input(root, numel, dtype, seed), f"broadcast {dtype}")
        if on_gloo:
            g = rank_input(rank, numel, dtype, seed)
            dist.broadcast(g, src=root, group=gloo)
            f.expect(t, g, f"broadcast {dtype} against gloo")
        t = rank_input(rank, numel, dtype, seed)
        dist.reduce(t, dst=1 % n, op=dist.ReduceOp.MAX)
        if rank == 1 % n:
            f.expect(t, reference("max", [rank_input(r, numel, dtype, seed) for r in range(n)]), f"reduce {dtype}")
        if on_gloo:
            g = rank_input(rank, numel, dtype, seed)
            dist.reduce(g, dst=1 % n, op=dist.ReduceOp.MAX, group=gloo)
            if rank == 1 % n:
                f.expect(t, g, f"reduce {dtype} against gloo")
        # all_gather, list and tensor forms
        mine = rank_input(rank, numel, dtype, seed)
        outs = [torch.zeros(numel, dtype=dtype) for _ in range(n)]
        dist.all_gather(outs, mine)
        for r in range(n):
            f.expect(outs[r], rank_input(r, numel, dtype, seed), f"all_gather {dtype} block {r}")
        if dtype in GLOO_DTYPES:
            gouts = [torch.zeros(numel, dtype=dtype) for _ in range(n)]
            dist.all_gather(gouts, mine, group=gloo)
            f.expect(torch.cat(outs), torch.cat(gouts), f"all_gather {dtype} against gloo")
        flat = torch.zeros(n * numel, dtype=dtype)
        dist.all_gather_into_tensor(flat, mine)
        f.expect(flat, torch.cat([rank_input(r, numel, dtype, seed) for r in range(n)]), f"all_gather_into_tensor {dtype}")
        # reduce_scatter, list and tensor forms
        full = [rank_input(r, n * numel, dtype, seed) for r in range(n)]
        expected_block = reference("sum", full)[rank * numel:(rank + 1) * numel]
        out = torch.zeros(numel, dtype=dtype)
        dist.reduce_scatter(out, list(full[rank].chunk(n)))
        f.expect(out, expected_block, f"reduce_scatter {dtype}")
        out = torch.zeros(numel, dtype=dtype)
        dist.reduce_scatter_tensor(out, full[rank].clone())
        f.expect(out, expected_block, f"reduce_scatter_tensor {dtype}")
        # all_to_all_single with uneven splits: rank r sends (r + j) % 3 + 1 rows of 5 to rank j
        rows = lambda src, dst: (src + dst) % 3 + 1  # noqa: E731
        send_splits = [rows(rank, j) for j in range(n)]
        recv_splits = [rows(j, rank) for j in range(n)]
        src = rank_input(rank, sum(send_splits) * 5, dtype, seed).reshape(-1, 5)
        dst = torch.zeros(sum(recv_splits), 5, dtype=dtype)
        dist.all_to_all_single(dst, src, recv_splits, send_splits)
        expected = []
        for j in range(n):
            offset = sum(rows(j, k) for k in range(rank))
            theirs = rank_input(j, sum(rows(j, k) for k in range(n)) * 5, dtype, seed).reshape(-1, 5)
            expected.append(theirs[offset:offset + rows(j, rank)])
        f.expect(dst, torch.cat(expected), f"all_to_all_single uneven {dtype}")
        if on_gloo:
            gdst = torch.zeros(sum(recv_splits), 5, dtype=dtype)
            dist.all_to_all_single(gdst, src, recv_splits, send_splits, group=gloo)
            f.expect(dst, gdst, f"all_to_all_single uneven {dtype} against gloo")
        # all_to_all (lists)
        ins = list(rank_input(rank, n * 7, dtype, seed).chunk(n))
        outs = [torch.zeros(7, dtype=dtype) for _ in range(n)]
        dist.all_to_all(outs, ins)
        for j in range(n):
            f.expect(outs[j], rank_input(j, n * 7, dtype, seed)[rank * 7:(rank + 1) * 7], f"all_to_all {dtype}")
        # gather and scatter
        g_root = 0
        outs = [torch.zeros(numel, dtype=dtype) for _ in range(n)] if rank == g_root else None
        dist.gather(mine, gather_list=outs, dst=g_root)
        if rank == g_root:
            for r in range(n):
                f.expect(outs[r], rank_input(r, numel, dtype, seed), f"gather {dtype} block {r}")
        if on_gloo:
            gouts = [torch.zeros(numel, dtype=dtype) for _ in range(n)] if rank == g_root else None
            dist.gather(mine, gather_list=gouts, dst=g_root, group=gloo)
            if rank == g_root:
                f.expect(torch.cat(outs), torch.cat(gouts), f"gather {dtype} against gloo")
        out = torch.zeros(numel, dtype=dtype)
        pieces = list(rank_input(g_root, n * numel, dtype, seed).chunk(n)) if rank == g_root else None
        dist.scatter(out, scatter_list=pieces, src=g_root)
        f.expect(out, rank_input(g_root, n * numel, dtype, seed)[rank * numel:(rank + 1) * numel], f"scatter {dtype}")
        if on_gloo:
            gout = torch.zeros(numel, dtype=dtype)
            dist.scatter(gout, scatter_list=pieces, src=g_root, group=gloo)
            f.expect(out, gout, f"scatter {dtype} against gloo")
    # bool: SUM is a logical or, as in NCCL's process group
    flags = torch.tensor([rank == 0, False, True])
    dist.all_reduce(flags)
    f.expect(flags, torch.tensor([True, False, True]), "all_reduce bool")
    # send/recv: a ring, isend/irecv, then batch_isend_irecv
    nxt, prev = (rank + 1) % n, (rank - 1) % n
    if n > 1:
        out = torch.zeros(100)
        reqs = [dist.isend(rank_input(rank, 100, torch.float32, 99), nxt), dist.irecv(out, prev)]
        for r in reqs:
            r.wait()
        f.expect(out, rank_input(prev, 100, torch.float32, 99), "isend/irecv ring")
        out = torch.zeros(1 << 20)  # large: every rank posts its send before its receive
        ops = [dist.P2POp(dist.isend, rank_input(rank, 1 << 20, torch.float32, 98), nxt),
               dist.P2POp(dist.irecv, out, prev)]
        for r in dist.batch_isend_irecv(ops):
            r.wait()
        f.expect(out, rank_input(prev, 1 << 20, torch.float32, 98), "batch_isend_irecv ring")
    dist.barrier()
    # new_group: the first n-1 ranks (all of them on one rank), split from the default group
    members = list(range(max(n - 1, 1)))
    splits = weft_torch._weft_torch.adopted_split_count()
    sub = dist.new_group(members, backend="weft")
    if rank in members:
        if weft_torch._weft_torch.adopted_split_count() != splits + 1:
            f.messages.append(f"rank {rank}: new_group did not adopt a split of the default group's communicator")
        t = rank_input(rank, 64, torch.float32, 7)
        dist.all_reduce(t, group=sub)
        f.expect(t, reference("sum", [rank_input(r, 64, torch.float32, 7) for r in members]), "new_group all_reduce")


def train(model, group, steps, seed, rank, n):
    """`steps` SGD steps of DDP over `group`; each rank's batch depends on the seed, step and rank."""
    ddp = torch.nn.parallel.DistributedDataParallel(model, process_group=group)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    for step in range(steps):
        g = torch.Generator().manual_seed(seed * 100000 + step * 100 + rank)
        x = torch.randn(16, 32, generator=g)
        y = torch.randint(0, 10, (16,), generator=g)
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(ddp(x), y).backward()
        optimizer.step()
    return [p.detach().clone() for p in model.parameters()]


def mlp(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64), torch.nn.ReLU(),
                               torch.nn.Linear(64, 10))


def check_ddp(rank, n, gloo, f):
    weft_params = train(mlp(5), None, 50, 3, rank, n)
    gloo_params = train(mlp(5), gloo, 50, 3, rank, n)
    for i, (a, b) in enumerate(zip(weft_params, gloo_params)):
        f.expect(a, b, f"DDP parameter {i} after 50 steps (weft vs gloo)", 1e-4)


def rank_main(rank, n, store_path, body, results, env=None):
    try:
        os.environ.update(env or {})
        torch.set_num_threads(1)
        store = dist.FileStore(store_path, n)
        dist.init_process_group("weft", store=store, rank=rank, world_size=n,
                                timeout=datetime.timedelta(seconds=60))
        gloo = dist.new_group(list(range(n)), backend="gloo")
        f = Failures(rank)
        body(rank, n, gloo, f)
        dist.barrier()
        dist.destroy_process_group()
        results.put((rank, f.messages))
    except BaseException:
        results.put((rank, [f"rank {rank} raised:\n{traceback.format_exc()}"]))


def collect(procs, results, expected, timeout):
    """The messages of `expected` ranks' reports, then the processes joined (one that hangs is
    killed and reported)."""
    messages, got = [], 0
    deadline = time.monotonic() + timeout
    while got < expected and time.monotonic() < deadline:
        try:
            _, msgs = results.get(timeout=max(0.1, deadline - time.monotonic()))
        except Exception:
            break
        got += 1
        messages += msgs
    for p in procs:
        p.join(timeout=max(1.0, deadline - time.monotonic()))
        if p.is_alive():
            p.kill()
            messages.append(f"a rank was still running after {timeout} s: killed")
    if got < expected:
        messages.append(f"only {got} of {expected} ranks reported")
    return messages


def run_ranks(n, body, timeout=240, env=None):
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    with tempfile.TemporaryDirectory() as tmp:
        store_path = os.path.join(tmp, "store")
        procs = [ctx.Process(target=rank_main, args=(r, n, store_path, body, results, env)) for r in range(n)]
        for p in procs:
            p.start()
        return collect(procs, results, n, timeout)


class BackendOps(unittest.TestCase):
    def test_one_rank(self):
        self.assertEqual(run_ranks(1, check_operations), [])

    def test_two_ranks(self):
        self.assertEqual(run_ranks(2, check_operations), [])

    def test_four_ranks(self):
        self.assertEqual(run_ranks(4, check_operations), [])


def check_env_compression(rank, n, gloo, f):
    """WEFT_COMPRESSION=int8 (set before init) compresses an unchanged program's float
    all_reduce: close to exact but not equal; integer all_reduce stays exact."""
    g = torch.Generator().manual_seed(77 + rank)
    x = torch.randn(100000, generator=g)
    exact = x.clone()
    dist.all_reduce(exact, group=gloo)
    dist.all_reduce(x)
    scale = float(exact.abs().max())
    err = float((x - exact).abs().max())
    if not 0 < err < 0.05 * scale:
        f.messages.append(f"rank {rank}: int8 all_reduce error {err:.3g} (max |sum| {scale:.3g}): "
                          "expected lossy, within 5%")
    i = rank_input(rank, 1000, torch.int32, 3)
    dist.all_reduce(i)
    f.expect(i, reference("sum", [rank_input(r, 1000, torch.int32, 3) for r in range(n)]), "int32 under WEFT_COMPRESSION")


class EnvCompression(unittest.TestCase):
    def test_two_ranks(self):
        self.assertEqual(run_ranks(2, check_env_compression, env={"WEFT_COMPRESSION": "int8"}), [])


class DdpParity(unittest.TestCase):
    def test_two_ranks(self):
        self.assertEqual(run_ranks(2, check_ddp), [])

    def test_four_ranks(self):
        self.assertEqual(run_ranks(4, check_ddp), [])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def env_rank(rank, n, port, results):
    """torchrun's environment: env:// with MASTER_ADDR/MASTER_PORT, the TCPStore on the port."""
    try:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(n))
        dist.init_process_group("weft", init_method="env://")
        t = torch.full((10,), float(rank + 1))
        dist.all_reduce(t)
        ok = bool((t == sum(range(1, n + 1))).all())
        dist.destroy_process_group()
        results.put((rank, [] if ok else [f"rank {rank}: wrong sum {t.tolist()}"]))
    except BaseException:
        results.put((rank, [f"rank {rank} raised:\n{traceback.format_exc()}"]))


def dying_rank(rank, n, store_path, results):
    """Rank 1 exits without a word after the first all-reduce; rank 0's next one must raise."""
    try:
        store = dist.FileStore(store_path, n)
        dist.init_process_group("weft", store=store, rank=rank, world_size=n,
                                timeout=datetime.timedelta(seconds=20))
        t = torch.ones(1000)
        dist.all_reduce(t)
        if rank == 1:
            os._exit(0)
        time.sleep(0.5)
        start = time.monotonic()
        try:
            dist.all_reduce(t)
            results.put((rank, ["rank 0: all_reduce with a dead peer returned normally"]))
        except RuntimeError as e:
            waited = time.monotonic() - start
            text = str(e)
            problems = []
            if "weft" not in text:
                problems.append(f"rank 0: the exception does not carry weft's error text: {text}")
            if waited > 25:
                problems.append(f"rank 0: the error took {waited:.1f} s")
            results.put((rank, problems))
        results.close()
        results.join_thread()  # os._exit would drop what the queue's feeder thread has not sent
        os._exit(0)  # the group cannot be destroyed cleanly with a dead peer
    except BaseException:
        results.put((rank, [f"rank {rank} raised:\n{traceback.format_exc()}"]))


class Lifecycle(unittest.TestCase):
    def collect(self, procs, results, expected):
        return collect(procs, results, expected, 90)

    def test_env_init_like_torchrun(self):
        ctx = multiprocessing.get_context("spawn")
        results = ctx.Queue()
        port = free_port()
        procs = [ctx.Process(target=env_rank, args=(r, 2, port, results)) for r in range(2)]
        for p in procs:
            p.start()
        self.assertEqual(self.collect(procs, results, 2), [])

    def test_dead_rank_is_an_exception_not_a_hang(self):
        ctx = multiprocessing.get_context("spawn")
        results = ctx.Queue()
        with tempfile.TemporaryDirectory() as tmp:
            procs = [ctx.Process(target=dying_rank, args=(r, 2, os.path.join(tmp, "store"), results)) for r in range(2)]
            for p in procs:
                p.start()
            self.assertEqual(self.collect(procs, results, 1), [])


if __name__ == "__main__":
    unittest.main()
