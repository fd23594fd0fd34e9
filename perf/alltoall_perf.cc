// alltoall_perf: nccl-tests' all-to-all benchmark on weft (ncclAlltoAll).
#include "perf/perf_harness.h"

namespace {

using namespace weft::perf;

// nccl-tests: count/n per peer (16-byte aligned), n of them sent and received.
CollCounts counts(size_t count, size_t typeSize, int nranks) {
  size_t block = alignedPerRankCount(count, typeSize, nranks);
  return {block * nranks, block * nranks, block, 0, 0};
}

ncclResult_t run(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t, int, ncclComm_t comm,
                 cudaStream_t stream) {
  return ncclAlltoAll(send, recv, count, type, comm, stream);
}

// Block j of rank r's result is block r of rank j's send buffer.
ExpectedValue expected(const CheckContext& ctx, size_t i) {
  const size_t block = ctx.counts.paramCount;
  return ctx.data.copied(static_cast<int>(i / block), static_cast<size_t>(ctx.rank) * block + i % block);
}

const CollTest kAlltoAll = {
    .name = "alltoall_perf",
    .reduces = false,
    .rooted = false,
    .counts = nullptr,
    .run = run,
    .expected = expected,
    .algFactor = factorRanks,         // n blocks
    .busFactor = busFactorAllGather,  // (n-1)/n
    .countsForType = counts,
    .checksInPlace = false,  // as nccl-tests: in-place all-to-all is timed, not checked
};

}  // namespace

WEFT_PERF_TOOL_MAIN(kAlltoAll)
