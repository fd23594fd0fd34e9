"""A DDP communication hook that all-reduces each gradient bucket with one of weft's codecs.

    model = DistributedDataParallel(model, process_group=group)   # backend "weft"
    model.register_comm_hook(state=None, hook=weft_torch.compression_hook("int8"))

Each bucket keeps its own error-feedback residual (when error_feedback=True): what the codec
dropped in one step is added to the bucket's gradient in the next. The hook averages, as DDP's
default all-reduce does. Codecs: fp16, bf16, int8, int4, sign, topk (ratio `topk_ratio`),
topk_approx. Float32 gradients only (other bucket dtypes go through an exact all-reduce).
"""

import math

import torch
import torch.distributed as dist

from . import _weft_torch

# The largest slice a compressed all-reduce cuts a buffer into (docs/compression.md, "Slices").
_MAX_SLICE = 1 << 20


def wire_bytes(codec, count, world, block_size=256, topk_ratio=0.01):
    """Bytes one rank sends for a compressed all-reduce of `count` float32 elements over `world`
    ranks (docs/compression.md): the quantized ring sends 2(n-1)/n of the encoded buffer, the
    all-gather codecs (sign, top-k) (n-1) times their encoding. codec None: an exact ring."""
    n = world
    if n <= 1:
        return 0
    blocks = math.ceil(count / block_size)
    ring = 2 * (n - 1) / n
    if codec is None:
        return ring * 4 * count
    if codec in ("fp16", "bf16"):
        return ring * 2 * count
    if codec == "int8":
        return ring * (count + 4 * blocks)
    if codec == "int4":
        return ring * (math.ceil(count / 2) + 4 * blocks)
    if codec == "sign":
        return (n - 1) * (math.ceil(count / 8) + 4 * blocks)
    if codec in ("topk", "topk_approx"):
        slices = math.ceil(count / _MAX_SLICE)
        per_slice = min(count, _MAX_SLICE)
        return (n - 1) * slices * (8 + 8 * math.ceil(topk_ratio * per_slice))
    raise ValueError(f"unknown codec {codec}")


class _HookState:
    def __init__(self, codec, error_feedback, topk_ratio, block_size, stochastic, seed):
        self.codec = codec
        self.error_feedback = error_feedback
        self.topk_ratio = topk_ratio
        self.block_size = block_size
        self.stochastic = stochastic
        self.seed = seed
        self.residuals = {}  # bucket index -> (element count, ErrorFeedback)
        self.bytes_in = 0  # float32 bytes handed to the hook
        self.wire_bytes = 0  # bytes this rank sent for them (wire_bytes), for compression ratios


def compression_hook(codec, error_feedback=True, topk_ratio=0.01, block_size=256, stochastic=False, seed=0,
                     group=None):
    """Returns hook(state, bucket) for DistributedDataParallel.register_comm_hook."""
    hook_state = _HookState(codec, error_feedback, topk_ratio, block_size, stochastic, seed)

    def hook(_ddp_state, bucket):
        process_group = group if group is not None else dist.distributed_c10d._get_default_group()
        tensor = bucket.buffer()
        if tensor.dtype != torch.float32:
            work = dist.all_reduce(tensor.div_(process_group.size()), group=process_group, async_op=True)
            return work.get_future().then(lambda fut: fut.value()[0])
        feedback = None
        if hook_state.error_feedback:
            index = bucket.index()
            count, feedback = hook_state.residuals.get(index, (None, None))
            if count != tensor.numel():
                feedback = _weft_torch.ErrorFeedback(tensor.numel())
                hook_state.residuals[index] = (tensor.numel(), feedback)
        hook_state.bytes_in += tensor.numel() * 4
        hook_state.wire_bytes += wire_bytes(hook_state.codec, tensor.numel(), process_group.size(),
                                            hook_state.block_size, hook_state.topk_ratio)
        work = _weft_torch.allreduce_compressed(process_group, tensor, hook_state.codec,
                                                topk_ratio=hook_state.topk_ratio,
                                                block_size=hook_state.block_size,
                                                stochastic=hook_state.stochastic, seed=hook_state.seed,
                                                feedback=feedback, average=True)
        return work.get_future().then(lambda fut: fut.value()[0])

    hook.state = hook_state
    return hook
