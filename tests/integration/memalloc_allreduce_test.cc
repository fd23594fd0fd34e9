// All-reduce on ncclMemAlloc's host memory (weftMemAllocHost: what ncclMemAlloc returns without
// a GPU, and keeps returning with one): large calls take the direct path (peers read each other's
// shared buffers), with the same results as the ring; if any rank's buffer is not shared, every
// rank falls back to the ring together.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "common/dtype.h"
#include "nccl.h"
#include "runtime/comm/communicator.h"
#include "runtime/device/device_api.h"
#include "tests/support/multiprocess.h"
#include "tests/support/reference.h"
#include "weft/weft.h"

using namespace weft;
using namespace weft::testing;

namespace {

struct Case {
  ncclDataType_t type;
  ncclRedOp_t op;
};
const Case kCases[] = {{ncclFloat32, ncclSum}, {ncclFloat16, ncclSum},  {ncclInt8, ncclMax},
                       {ncclFloat64, ncclAvg}, {ncclBfloat16, ncclMin}, {ncclUint64, ncclProd}};

// Returns 0 when every case is right and the path taken was the expected one.
int memAllocGrid(int rank, int nranks, const ncclUniqueId& id, bool everyRankShared) {
  ncclComm_t comm;
  if (ncclCommInitRank(&comm, nranks, id, rank) != ncclSuccess) return 1;
  const size_t count = (1 << 20) + 13;  // over the direct path's 1 MiB threshold for every type
  bool shared = everyRankShared || rank != 0;
  void* send = nullptr;
  void* recv = nullptr;
  std::vector<char> plainSend, plainRecv;
  if (shared) {
    if (weftMemAllocHost(&send, count * 8) != ncclSuccess || weftMemAllocHost(&recv, count * 8) != ncclSuccess)
      return 2;
  } else {
    plainSend.resize(count * 8);
    plainRecv.resize(count * 8);
    send = plainSend.data();
    recv = plainRecv.data();
  }
  size_t wrong = 0;
  unsigned seed = 40;
  for (const Case& c : kCases)
    for (bool inPlace : {false, true}) {
      ++seed;
      fillInput(send, count, rank, c.type, c.op, seed);
      void* out = inPlace ? send : recv;
      if (ncclAllReduce(send, out, count, c.type, c.op, comm, nullptr) != ncclSuccess) {
        fprintf(stderr, "rank %d: %s\n", rank, ncclGetLastError(comm));
        return 3;
      }
      wrong += countMismatches(out, count, nranks, c.type, c.op, seed, "memalloc");
    }
  int peer = (rank + 1) % nranks;
  bool tookDirect = !comm->direct.peerSendBuffers.empty() && comm->direct.peerSendBuffers[peer] != nullptr;
  ncclCommDestroy(comm);
  if (shared) {
    ncclMemFree(send);
    ncclMemFree(recv);
  }
  if (tookDirect != everyRankShared) return 4;
  return wrong == 0 ? 0 : 5;
}

class MemAllocRanks : public ::testing::TestWithParam<int> {};

TEST_P(MemAllocRanks, DirectPathMatchesReference) {
  int nranks = GetParam();
  auto outcomes =
      runRankProcesses(nranks, [&](int rank, const ncclUniqueId& id) { return memAllocGrid(rank, nranks, id, true); });
  EXPECT_EQ(describeFailures(outcomes), "");
}

TEST_P(MemAllocRanks, OneUnsharedBufferMeansEveryoneUsesTheRing) {
  int nranks = GetParam();
  auto outcomes =
      runRankProcesses(nranks, [&](int rank, const ncclUniqueId& id) { return memAllocGrid(rank, nranks, id, false); });
  EXPECT_EQ(describeFailures(outcomes), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, MemAllocRanks, ::testing::Values(2, 3, 4));

TEST(MemAlloc, ArgumentsAreChecked) {
  EXPECT_EQ(ncclMemAlloc(nullptr, 16), ncclInvalidArgument);
  void* p = nullptr;
  EXPECT_EQ(ncclMemAlloc(&p, 0), ncclInvalidArgument);
  int onStack = 0;
  EXPECT_EQ(ncclMemFree(&onStack), ncclInvalidArgument);
  EXPECT_EQ(ncclMemFree(nullptr), ncclSuccess);
  EXPECT_EQ(weftMemAllocHost(nullptr, 16), ncclInvalidArgument);
  EXPECT_EQ(weftMemAllocHost(&p, 0), ncclInvalidArgument);
  ASSERT_EQ(weftMemAllocHost(&p, 100), ncclSuccess);
  memset(p, 1, 100);
  EXPECT_EQ(ncclMemFree(p), ncclSuccess);
  // Without a device, ncclMemAlloc gives that same host memory (with one, device memory:
  // stream_order_test and tests/gpu/memalloc_cuda_test).
  if (deviceApi() == nullptr) {
    ASSERT_EQ(ncclMemAlloc(&p, 100), ncclSuccess);
    memset(p, 1, 100);
    EXPECT_EQ(ncclMemFree(p), ncclSuccess);
  }
}

}  // namespace
