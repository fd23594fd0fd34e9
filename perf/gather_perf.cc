// gather_perf: nccl-tests' gather benchmark on weft (ncclGather; -r picks the root).
#include "perf/perf_harness.h"

namespace {

using namespace weft::perf;

// Each rank sends a 16-byte-aligned block of count/n; the root receives n of them. In place,
// rank r sends from recvbuf + r * block (its place in the root's result).
CollCounts counts(size_t count, size_t typeSize, int nranks) {
  size_t block = alignedPerRankCount(count, typeSize, nranks);
  return {block, block * nranks, block, block, 0};
}

ncclResult_t run(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t, int root,
                 ncclComm_t comm, cudaStream_t stream) {
  return ncclGather(send, recv, count, type, root, comm, stream);
}

// Block j of the root's result is rank j's input; the other ranks receive nothing.
ExpectedValue expected(const CheckContext& ctx, size_t i) {
  const size_t block = ctx.counts.sendCount;
  return ctx.data.copied(static_cast<int>(i / block), i % block);
}
bool checksResult(const CheckContext& ctx) { return ctx.rank == ctx.root; }

const CollTest kGather = {
    .name = "gather_perf",
    .reduces = false,
    .rooted = true,
    .counts = nullptr,
    .run = run,
    .expected = expected,
    .algFactor = factorRanks,
    .busFactor = busFactorAllGather,  // (n-1)/n
    .checksResult = checksResult,
    .countsForType = counts,
};

}  // namespace

WEFT_PERF_TOOL_MAIN(kGather)
