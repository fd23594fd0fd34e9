// all_reduce_perf: nccl-tests' all-reduce benchmark on weft.
#include "perf/perf_harness.h"

namespace {

using namespace weft::perf;

CollCounts counts(size_t count, int) { return {count, count, count, 0, 0}; }

ncclResult_t run(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op, int, ncclComm_t comm,
                 cudaStream_t stream) {
  return ncclAllReduce(send, recv, count, type, op, comm, stream);
}

// Every rank receives the reduction over all ranks of element i.
ExpectedValue expected(const CheckContext& ctx, size_t i) { return ctx.data.reduced(i); }

const CollTest kAllReduce = {
    .name = "all_reduce_perf",
    .reduces = true,
    .rooted = false,
    .counts = counts,
    .run = run,
    .expected = expected,
    .algFactor = factorOne,
    .busFactor = busFactorAllReduce,  // 2(n-1)/n
};

}  // namespace

WEFT_PERF_TOOL_MAIN(kAllReduce)
