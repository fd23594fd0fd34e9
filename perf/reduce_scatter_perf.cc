// reduce_scatter_perf: nccl-tests' reduce-scatter benchmark on weft.
#include "perf/perf_harness.h"

namespace {

using namespace weft::perf;

// nccl-tests: each rank receives a 16-byte-aligned block of count/n and sends n of them; in
// place, rank r's result is its own block of the send buffer (recvbuf + r * block).
CollCounts counts(size_t count, size_t typeSize, int nranks) {
  size_t block = alignedPerRankCount(count, typeSize, nranks);
  return {block * nranks, block, block, 0, block};
}

ncclResult_t run(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op, int, ncclComm_t comm,
                 cudaStream_t stream) {
  return ncclReduceScatter(send, recv, count, type, op, comm, stream);
}

// Rank r receives the reduction over all ranks of block r of the send buffers.
ExpectedValue expected(const CheckContext& ctx, size_t i) {
  return ctx.data.reduced(static_cast<size_t>(ctx.rank) * ctx.counts.recvCount + i);
}

const CollTest kReduceScatter = {
    .name = "reduce_scatter_perf",
    .reduces = true,
    .rooted = false,
    .counts = nullptr,
    .run = run,
    .expected = expected,
    .algFactor = factorRanks,         // n blocks sent
    .busFactor = busFactorAllGather,  // (n-1)/n
    .countsForType = counts,
};

}  // namespace

WEFT_PERF_TOOL_MAIN(kReduceScatter)
