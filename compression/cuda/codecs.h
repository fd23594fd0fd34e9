// CUDA versions of the block codecs and casts (built when WEFT_HAVE_CUDA). They produce the
// same bytes as the CPU kernels for the same input, configuration and EncodeContext: same
// formulas (rng.h, common/numeric.h's conversions), every float operation written as an
// explicitly rounded intrinsic and the file compiled with --fmad=false.
//
// Pointers are device pointers; work is queued on `stream` (a cudaStream_t, or null for the
// default stream) and nothing waits for it. Top-k has no CUDA kernel yet (supports() false).
#pragma once

#include <cstddef>

#include "compression/types.h"
#include "nccl.h"

namespace weft::compression::cuda {

bool supports(CodecKind kind);

ncclResult_t encode(const CodecConfig& config, const float* x, size_t count, void* dst, const EncodeContext& ctx,
                    void* stream);
// accumulate: out += alpha * x'; else out = x'.
ncclResult_t decode(const CodecConfig& config, const void* src, size_t count, float* out, bool accumulate,
                    float alpha, void* stream);

}  // namespace weft::compression::cuda
