// CUDA versions of every codec (built when WEFT_HAVE_CUDA): casts, int8/int4, sign (codecs.cu)
// and exact/approximate top-k (topk.cu). They produce the same bytes as the CPU kernels for
// the same input, configuration and EncodeContext: same formulas (rng.h, common/numeric.h's
// conversions, topk_sample.h), every float operation written as an explicitly rounded
// intrinsic and the files compiled with --fmad=false. Top-k's encode is a pure function of
// the data and its sampled threshold, which the kernels recompute (cuda/topk.h).
//
// Pointers are device pointers; work is queued on `stream` (a cudaStream_t, or null for the
// default stream) and nothing waits for it. encode() of top-k takes its scratch from a buffer
// cached per (device, stream) (cuda/workspace.h; allocated on the first call of a larger
// size); cuda::topkEncode takes the caller's instead.
//
// Status: the top-k kernels compile (sm_90, no warnings) but have not been run on a GPU yet;
// their logic was checked against the CPU selector in a host model only.
// tests/unit/compression_cuda_test.cc compares them with the CPU bytes where a GPU is present.
#pragma once

#include <cstddef>

#include "compression/types.h"
#include "nccl.h"

namespace weft::compression::cuda {

bool supports(CodecKind kind);

ncclResult_t encode(const CodecConfig& config, const float* x, size_t count, void* dst, const EncodeContext& ctx,
                    void* stream);
// accumulate: out += alpha * x'; else out = x'.
ncclResult_t decode(const CodecConfig& config, const void* src, size_t count, float* out, bool accumulate, float alpha,
                    void* stream);

}  // namespace weft::compression::cuda
