// Device scratch for CUDA codec calls whose signature takes none (cuda::encode of top-k): one
// buffer per (device, stream), grown when a call needs more and kept for the process lifetime.
// Calls on one stream run in order, so they can share its buffer; other streams get their own.
// Growing waits for the stream (the old buffer may be in use) and then reallocates, so only the
// first calls of a new, larger size allocate. Callers that manage their own scratch (or create
// many short-lived streams) pass it to cuda::topkEncode instead.
#pragma once

#include <cstddef>

#include "nccl.h"

namespace weft::compression::cuda {

// *out: at least `bytes` of device memory on the current device, for work queued on `stream`.
ncclResult_t streamWorkspace(void* stream, size_t bytes, void** out);

}  // namespace weft::compression::cuda
