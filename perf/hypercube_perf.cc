// hypercube_perf: nccl-tests' hypercube benchmark on weft: an all-gather in log2(n) steps, each
// a group of one ncclSend and one ncclRecv with the partner rank ^ 2^k, exchanging the 2^k
// blocks gathered so far. Needs a power-of-two rank count (else, as nccl-tests, it skips).
#include <cstdio>
#include <cstring>

#include "perf/perf_harness.h"

namespace {

using namespace weft::perf;

// As all_gather_perf: a 16-byte-aligned block of count/n per rank, in place at recvbuf + r * block.
CollCounts counts(size_t count, size_t typeSize, int nranks) {
  size_t block = alignedPerRankCount(count, typeSize, nranks);
  return {block, block * nranks, block, block, 0};
}

ncclResult_t run(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t, int, ncclComm_t comm,
                 cudaStream_t stream) {
  int n = 0, rank = 0;
  ncclResult_t r = ncclCommCount(comm, &n);
  if (r == ncclSuccess) r = ncclCommUserRank(comm, &rank);
  if (r != ncclSuccess) return r;
  char* out = static_cast<char*>(recv);
  const size_t blockBytes = count * typeSize(type);
  // Host memory: the local copy of this rank's own block (nccl-tests: cudaMemcpyAsync).
  if (out + rank * blockBytes != send && blockBytes) std::memmove(out + rank * blockBytes, send, blockBytes);
  for (int mask = 1; mask < n; mask <<= 1) {
    const int have = rank & ~(mask - 1);  // first of the `mask` blocks this rank holds
    const int get = have ^ mask;          // first of the partner's
    if ((r = ncclGroupStart()) != ncclSuccess) return r;
    ncclResult_t s = ncclSend(out + have * blockBytes, count * mask, type, rank ^ mask, comm, stream);
    ncclResult_t v = ncclRecv(out + get * blockBytes, count * mask, type, rank ^ mask, comm, stream);
    r = ncclGroupEnd();
    if (s != ncclSuccess) return s;
    if (v != ncclSuccess) return v;
    if (r != ncclSuccess) return r;
  }
  return ncclSuccess;
}

ExpectedValue expected(const CheckContext& ctx, size_t i) {
  const size_t block = ctx.counts.sendCount;
  return ctx.data.copied(static_cast<int>(i / block), i % block);
}

const char* skipReason(int nranks) {
  static char text[64];
  if (nranks > 0 && (nranks & (nranks - 1)) == 0) return nullptr;
  std::snprintf(text, sizeof(text), "nRanks %d is not a power of 2, skipping", nranks);
  return text;
}

const CollTest kHyperCube = {
    .name = "hypercube_perf",
    .reduces = false,
    .rooted = false,
    .counts = nullptr,
    .run = run,
    .expected = expected,
    // nccl-tests' hypercube: algbw counts the (n-1) blocks each rank receives; busbw = algbw.
    .algFactor = factorRanksMinusOne,
    .busFactor = factorOne,
    .countsForType = counts,
    .skipReason = skipReason,
};

}  // namespace

WEFT_PERF_TOOL_MAIN(kHyperCube)
