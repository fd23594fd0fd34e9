// broadcast_perf: nccl-tests' broadcast benchmark on weft (ncclBroadcast; -r picks the root).
#include "perf/perf_harness.h"

namespace {

using namespace weft::perf;

CollCounts counts(size_t count, int) { return {count, count, count, 0, 0}; }

ncclResult_t run(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t, int root,
                 ncclComm_t comm, cudaStream_t stream) {
  return ncclBroadcast(send, recv, count, type, root, comm, stream);
}

// Every rank receives the root's input (every rank fills its send buffer with its own data,
// so a result taken from the wrong rank shows).
ExpectedValue expected(const CheckContext& ctx, size_t i) { return ctx.data.copied(ctx.root, i); }

const CollTest kBroadcast = {
    .name = "broadcast_perf",
    .reduces = false,
    .rooted = true,
    .counts = counts,
    .run = run,
    .expected = expected,
    .algFactor = factorOne,
    .busFactor = factorOne,
};

}  // namespace

WEFT_PERF_TOOL_MAIN(kBroadcast)
