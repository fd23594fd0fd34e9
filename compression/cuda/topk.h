// CUDA top-k (exact and approximate) in the top-k codec's format, the same bytes as the CPU
// codec for the same chunk, configuration and EncodeContext (see compression/topk.h for the
// order: key = bits & 0x7fffffff, ties to the lower index, pairs in ascending index order).
//
// Exact: radix selection on the key, three histogram passes (11, 10, 10 key bits, shared-memory
// atomics per block) that each narrow the bin holding the k-th largest key, so the cut (key K,
// and how many elements equal to K are taken) is known without a sort. Then a count pass per
// tile of 4096 elements (#{key > K}, #{key == K}), one block scanning the tile counts, and a
// write pass where each tile with winners places them by block prefix sums: index order, and
// the lowest-index elements equal to K win.
//
// Approximate: the CPU selector returns the exact top min(k, c), c = #{key >= t}, t the sampled
// threshold (compression/topk_sample.h): every element it drops is beaten by k kept ones, and
// ties go to the lower index. So the kernels take the same sample, find t by the same radix
// selection over the sampled keys, count c during the first pass over the chunk, and select the
// exact top min(k, c). Chunks the CPU selects exactly (k == n, n / 16 < 4 S) are exact here too.
// Mirrors Codec (k <= topkCount(maxCount)), not a TopKSelector built for a smaller k.
//
// Nothing is allocated: the kernels' scratch is `workspace` (device memory, 4-byte aligned, at
// least topkWorkspaceBytes(count): ~50 KiB plus 8 bytes per 4096 elements; no need to clear it).
// Work is queued on `stream`; nothing waits. About 10 kernel launches per encode.
#pragma once

#include <cstddef>

#include "compression/types.h"
#include "nccl.h"

namespace weft::compression::cuda {

size_t topkWorkspaceBytes(size_t count);

// config.kind is kTopK or kTopKApprox; dst holds encodedBytes(config, count). Pairs past the
// stored count are left as they were (as on the CPU). count < 2^32.
ncclResult_t topkEncode(const CodecConfig& config, const float* x, size_t count, void* dst, const EncodeContext& ctx,
                        void* workspace, size_t workspaceBytes, void* stream);

// Scatters the stored pairs of a top-k chunk of `count` elements: out = decode (zeros elsewhere),
// or out[i] += alpha * value for the stored i when accumulating. The indices of one chunk are
// distinct (encode writes them so), so the scatter has no races.
ncclResult_t topkDecode(const CodecConfig& config, const void* src, size_t count, float* out, bool accumulate,
                        float alpha, void* stream);

}  // namespace weft::compression::cuda
