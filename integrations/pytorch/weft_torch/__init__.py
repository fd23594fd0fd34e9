"""weft as a torch.distributed backend for CPU tensors.

    import weft_torch                                   # registers backend "weft"
    torch.distributed.init_process_group("weft", ...)   # torchrun's env://, a TCPStore or FileStore

Every operation of torch.distributed on CPU tensors runs on weft's host collectives, on a worker
thread per process group: calls return at once (async_op=True is truly asynchronous, and DDP
overlaps its gradient all-reduces with the backward pass), and Work.wait() raises weft's error
text if the operation failed. The unique id travels through the group's store, so the
launcher's MASTER_PORT (the TCPStore's) is never bound by weft. `timeout=` becomes the
communicator's time-out (weftCommSetTimeout). new_group splits the default group's
communicator (ncclCommSplit). WEFT_COMPRESSION applies to unchanged trainers;
compression_hook() gives a DDP model its own codec and error-feedback state.

GPU tensors do not go through this backend: GPU trainers keep backend "nccl" and load weft's
libnccl.so.2 instead of NVIDIA's.
"""

import torch.distributed as _dist

from . import _weft_torch
from .compression_hook import compression_hook, wire_bytes  # noqa: F401

__all__ = ["compression_hook", "wire_bytes", "allreduce_compressed", "all_reduce_payload_bytes", "ErrorFeedback"]

ErrorFeedback = _weft_torch.ErrorFeedback
allreduce_compressed = _weft_torch.allreduce_compressed
all_reduce_payload_bytes = _weft_torch.all_reduce_payload_bytes


def _create(store, rank, size, timeout):
    return _weft_torch.create_process_group(store, rank, size, timeout)


_c10d = _dist.distributed_c10d
_torch_new_group = _c10d.new_group


def _new_group(ranks=None, *args, **kwargs):
    """torch.distributed.new_group, which for backend "weft" first splits the default group's
    communicator (ncclCommSplit, on every rank: torch calls the backend on members only, and a
    split needs everyone); the members' new group adopts the split."""
    backend = kwargs.get("backend", args[1] if len(args) > 1 else None)
    if _dist.is_initialized() and _dist.get_backend() == "weft" and str(backend or "weft").lower() == "weft":
        default = _c10d._get_default_group()
        members = sorted(ranks) if ranks is not None else list(range(default.size()))
        _weft_torch.split_for_new_group(default, members)
    try:
        return _torch_new_group(ranks, *args, **kwargs)
    finally:
        _weft_torch.discard_pending_split()


if "WEFT" not in _dist.Backend._plugins:
    _dist.Backend.register_backend("weft", _create)
    _c10d.new_group = _new_group
    _dist.new_group = _new_group
