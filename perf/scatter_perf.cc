// scatter_perf: nccl-tests' scatter benchmark on weft (ncclScatter; -r picks the root).
#include "perf/perf_harness.h"

namespace {

using namespace weft::perf;

// The root sends n 16-byte-aligned blocks of count/n, each rank receives one. In place, rank
// r receives into sendbuf + r * block.
CollCounts counts(size_t count, size_t typeSize, int nranks) {
  size_t block = alignedPerRankCount(count, typeSize, nranks);
  return {block * nranks, block, block, 0, block};
}

ncclResult_t run(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t, int root,
                 ncclComm_t comm, cudaStream_t stream) {
  return ncclScatter(send, recv, count, type, root, comm, stream);
}

// Rank r receives block r of the root's send buffer.
ExpectedValue expected(const CheckContext& ctx, size_t i) {
  return ctx.data.copied(ctx.root, static_cast<size_t>(ctx.rank) * ctx.counts.recvCount + i);
}

const CollTest kScatter = {
    .name = "scatter_perf",
    .reduces = false,
    .rooted = true,
    .counts = nullptr,
    .run = run,
    .expected = expected,
    .algFactor = factorRanks,
    .busFactor = busFactorAllGather,  // (n-1)/n
    .countsForType = counts,
};

}  // namespace

WEFT_PERF_TOOL_MAIN(kScatter)
