// sendrecv_perf: nccl-tests' send/receive benchmark on weft. Every rank sends its buffer to
// rank+1 and receives rank-1's (modulo n) in one group: a ring of point-to-point transfers.
#include "perf/perf_harness.h"

namespace {

using namespace weft::perf;

CollCounts counts(size_t count, int) { return {count, count, count, 0, 0}; }

ncclResult_t run(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t, int, ncclComm_t comm,
                 cudaStream_t stream) {
  int n = 0, rank = 0;
  ncclResult_t r = ncclCommCount(comm, &n);
  if (r == ncclSuccess) r = ncclCommUserRank(comm, &rank);
  if (r != ncclSuccess) return r;
  r = ncclGroupStart();
  if (r != ncclSuccess) return r;
  ncclResult_t s = ncclSend(send, count, type, (rank + 1) % n, comm, stream);
  ncclResult_t v = ncclRecv(recv, count, type, (rank - 1 + n) % n, comm, stream);
  r = ncclGroupEnd();  // always closes the group, even after a failed call
  return s != ncclSuccess ? s : v != ncclSuccess ? v : r;
}

// Rank r receives rank r-1's input.
ExpectedValue expected(const CheckContext& ctx, size_t i) {
  return ctx.data.copied((ctx.rank - 1 + ctx.nranks) % ctx.nranks, i);
}

const CollTest kSendRecv = {
    .name = "sendrecv_perf",
    .reduces = false,
    .rooted = false,
    .counts = counts,
    .run = run,
    .expected = expected,
    .algFactor = factorOne,
    .busFactor = factorOne,
};

}  // namespace

WEFT_PERF_TOOL_MAIN(kSendRecv)
