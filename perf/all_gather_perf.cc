// all_gather_perf: nccl-tests' all-gather benchmark on weft.
#include "perf/perf_harness.h"

namespace {

using namespace weft::perf;

// nccl-tests: each rank sends a 16-byte-aligned block of count/n; in place, rank r's block is
// already at its place in the receive buffer (recvbuf + r * block).
CollCounts counts(size_t count, size_t typeSize, int nranks) {
  size_t block = alignedPerRankCount(count, typeSize, nranks);
  return {block, block * nranks, block, block, 0};
}

ncclResult_t run(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t, int, ncclComm_t comm,
                 cudaStream_t stream) {
  return ncclAllGather(send, recv, count, type, comm, stream);
}

// Block j of every rank's result is rank j's input.
ExpectedValue expected(const CheckContext& ctx, size_t i) {
  const size_t block = ctx.counts.sendCount;
  return ctx.data.copied(static_cast<int>(i / block), i % block);
}

const CollTest kAllGather = {
    .name = "all_gather_perf",
    .reduces = false,
    .rooted = false,
    .counts = nullptr,
    .run = run,
    .expected = expected,
    .algFactor = factorRanks,         // n blocks received
    .busFactor = busFactorAllGather,  // (n-1)/n
    .countsForType = counts,
};

}  // namespace

WEFT_PERF_TOOL_MAIN(kAllGather)
