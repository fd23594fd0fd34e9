"""A DDP communication hook that all-reduces each gradient bucket with one of weft's codecs.

    model = DistributedDataParallel(model, process_group=group)   # backend "weft"
    model.register_comm_hook(state=None, hook=weft_torch.compression_hook("int8"))

Each bucket keeps its own error-feedback residual (when error_feedback=True): what the codec
dropped in one step is added to the bucket's gradient in the next. The hook averages, as DDP's
default all-reduce does. Codecs: fp16, bf16, int8, int4, sign, topk (ratio `topk_ratio`),
topk_approx. Float32 gradients only (other bucket dtypes go through an exact all-reduce).
"""

import torch
import torch.distributed as dist

from . import _weft_torch


class _HookState:
    def __init__(self, codec, error_feedback, topk_ratio, block_size, stochastic, seed):
        self.codec = codec
        self.error_feedback = error_feedback
        self.topk_ratio = topk_ratio
        self.block_size = block_size
        self.stochastic = stochastic
        self.seed = seed
        self.residuals = {}  # bucket index -> (element count, ErrorFeedback)
        self.bytes_in = 0  # float32 bytes handed to the hook (for compression ratios)


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
        work = _weft_torch.allreduce_compressed(process_group, tensor, hook_state.codec,
                                                topk_ratio=hook_state.topk_ratio,
                                                block_size=hook_state.block_size,
                                                stochastic=hook_state.stochastic, seed=hook_state.seed,
                                                feedback=feedback, average=True)
        return work.get_future().then(lambda fut: fut.value()[0])

    hook.state = hook_state
    return hook
