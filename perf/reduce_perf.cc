// reduce_perf: nccl-tests' reduce benchmark on weft (-r picks the root).
#include "perf/perf_harness.h"

namespace {

using namespace weft::perf;

CollCounts counts(size_t count, int) { return {count, count, count, 0, 0}; }

ncclResult_t run(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op, int root,
                 ncclComm_t comm, cudaStream_t stream) {
  return ncclReduce(send, recv, count, type, op, root, comm, stream);
}

// The root receives the reduction over all ranks; other ranks' receive buffers are unused.
ExpectedValue expected(const CheckContext& ctx, size_t i) { return ctx.data.reduced(i); }
bool checksResult(const CheckContext& ctx) { return ctx.rank == ctx.root; }

const CollTest kReduce = {
    .name = "reduce_perf",
    .reduces = true,
    .rooted = true,
    .counts = counts,
    .run = run,
    .expected = expected,
    .algFactor = factorOne,
    .busFactor = factorOne,
    .checksResult = checksResult,
};

}  // namespace

WEFT_PERF_TOOL_MAIN(kReduce)
