// Pure parts of the harness (no communication): factors, fill, check.
#include <cmath>
#include <cstdio>

#include "perf/perf_harness.h"

namespace weft::perf {

double factorOne(int) { return 1.0; }
double factorRanks(int nranks) { return static_cast<double>(nranks); }
double busFactorAllReduce(int nranks) { return nranks > 0 ? 2.0 * (nranks - 1) / nranks : 0.0; }
double busFactorAllGather(int nranks) { return nranks > 0 ? static_cast<double>(nranks - 1) / nranks : 0.0; }

double factorRanksMinusOne(int nranks) { return nranks > 1 ? static_cast<double>(nranks - 1) : 0.0; }

size_t alignedPerRankCount(size_t count, size_t typeSize, int nranks) {
  if (nranks <= 0 || typeSize == 0) return 0;
  const size_t perRank = count / static_cast<size_t>(nranks);
  if (typeSize >= 16) return perRank;
  return perRank & ~(16 / typeSize - 1);  // nccl-tests: (count/nranks) & -(16/eltSize)
}

CollCounts collCounts(const CollTest& test, size_t count, size_t typeSize, int nranks) {
  return test.countsForType ? test.countsForType(count, typeSize, nranks) : test.counts(count, nranks);
}

void fillSendBuffer(const CollTest& test, const CheckContext& ctx, void* sendbuf) {
  if (test.fillSend) {
    test.fillSend(ctx, sendbuf);
  } else {
    ctx.data.fill(sendbuf, ctx.counts.sendCount, ctx.rank);
  }
}

int64_t countWrong(const CollTest& test, const CheckContext& ctx, const void* recvbuf, std::string* report) {
  if (test.checksResult && !test.checksResult(ctx)) return 0;
  const ncclDataType_t type = ctx.data.type();
  int64_t wrong = 0;
  for (size_t i = 0; i < ctx.counts.recvCount; ++i) {
    ExpectedValue want = test.expected(ctx, i);
    double got = loadElement(recvbuf, i, type);
    if (ctx.data.matches(got, want)) continue;
    if (report && wrong < 5) {
      char line[200];
      std::snprintf(line, sizeof(line), "rank %d: element %zu of %zu is %.17g, expected %.17g (tolerance %g)\n",
                    ctx.rank, i, ctx.counts.recvCount, got, want.value, want.tolerance);
      *report += line;
    }
    ++wrong;
  }
  return wrong;
}

size_t reportedBytes(const CollCounts& c, size_t typeSize) {
  return (c.sendCount > c.recvCount ? c.sendCount : c.recvCount) * typeSize;
}

uint64_t testSeed(ncclDataType_t type, int op, size_t bytes, int inPlace, int rep) {
  uint64_t s = 0x243f6a8885a308d3ULL;
  for (uint64_t v : {static_cast<uint64_t>(type), static_cast<uint64_t>(op + 1), static_cast<uint64_t>(bytes),
                     static_cast<uint64_t>(inPlace), static_cast<uint64_t>(rep)}) {
    s ^= v + 0x9e3779b97f4a7c15ULL + (s << 6) + (s >> 2);
  }
  return s;
}

}  // namespace weft::perf
