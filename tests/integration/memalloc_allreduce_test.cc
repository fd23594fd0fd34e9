// Collectives on ncclMemAlloc's host memory (weftMemAllocHost: what ncclMemAlloc returns without
// a GPU, and keeps returning with one): large calls take the direct path (peers read and write
// each other's shared buffers), with the same results as the ring; if any rank's buffer is not
// shared, every rank falls back to the selected algorithm together. The all-reduce here; the
// all-gather, reduce-scatter, broadcast and reduce in the second grid.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "nccl.h"
#include "runtime/comm/communicator.h"
#include "runtime/device/device_api.h"
#include "runtime/exec/collective_record.h"
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

// "" when `rankMain` returned 0 on each of `n` rank processes, else what went wrong.
std::string onEveryRank(int n, const std::function<int(int rank, const ncclUniqueId& id)>& rankMain) {
  return describeFailures(runRankProcesses(n, rankMain));
}

TEST_P(MemAllocRanks, DirectPathMatchesReference) {
  const int nranks = GetParam();
  EXPECT_EQ(onEveryRank(nranks, [&](int rank, const ncclUniqueId& id) { return memAllocGrid(rank, nranks, id, true); }),
            "");
}

TEST_P(MemAllocRanks, OneUnsharedBufferMeansEveryoneUsesTheRing) {
  const int nranks = GetParam();
  EXPECT_EQ(
      onEveryRank(nranks, [&](int rank, const ncclUniqueId& id) { return memAllocGrid(rank, nranks, id, false); }), "");
}

// The algorithm the communicator's record names for its last collective.
std::string lastAlgorithm(ncclComm_t comm) {
  const std::vector<const CollectiveRecord*> entries = comm->exec.records.entries();
  return entries.empty() ? std::string("(none)") : std::string(entries.back()->algorithm);
}

// A communicator whose calls of any size may take the direct path (WEFT_DIRECT_MIN_BYTES=1);
// null when its init failed.
ncclComm_t commForEveryDirectCall(int rank, int n, const ncclUniqueId& id) {
  setenv("WEFT_DIRECT_MIN_BYTES", "1", 1);
  ncclComm_t comm = nullptr;
  return ncclCommInitRank(&comm, n, id, rank) == ncclSuccess ? comm : nullptr;
}

// The all-gather, reduce-scatter, broadcast, reduce, all-to-all, gather and scatter (every root
// in turn), in and out of place, of several types and sizes down to one element (empty chunks);
// every all-gather, reduce-scatter and out-of-place all-to-all direct (WEFT_DIRECT_MIN_BYTES=1)
// where every rank's buffers are shared (rank 0's are not where `everyRankShared` is false), and
// the rooted collectives too where every rank has a device. 0 when every result is right and every call took the
// expected path.
int otherCollectivesGrid(int rank, int n, const ncclUniqueId& id, bool everyRankShared) {
  ncclComm_t comm = commForEveryDirectCall(rank, n, id);
  if (!comm) return 1;
  constexpr size_t kMostCount = 4099;
  const size_t bytes = n * kMostCount * 8;
  char* send = nullptr;
  char* recv = nullptr;
  std::vector<char> plainSend, plainRecv;
  if (everyRankShared || rank != 0) {
    if (weftMemAllocHost(reinterpret_cast<void**>(&send), bytes) != ncclSuccess ||
        weftMemAllocHost(reinterpret_cast<void**>(&recv), bytes) != ncclSuccess)
      return 2;
  } else {
    plainSend.resize(bytes);
    plainRecv.resize(bytes);
    send = plainSend.data();
    recv = plainRecv.data();
  }
  size_t wrong = 0;
  int wrongPath = 0;
  unsigned seed = 70;
  int scenario = 0;
  // `direct`: whether the call may go direct where every rank's buffers are shared (broadcast and
  // reduce only where every rank has a device, as on a GPU machine: runtime/exec/direct_path.h).
  const bool everyRankHasADevice = std::all_of(comm->layout.ranks.begin(), comm->layout.ranks.end(),
                                               [](const RankInfo& info) { return info.cudaDevice >= 0; });
  // A rooted call off rank 0's root: rank 0 (malloc'd buffers where `everyRankShared` is false)
  // has no buffer its peers touch in a broadcast, gather or scatter, so the call may go direct.
  auto rootedGoesDirect = [&](int root) { return everyRankHasADevice && (everyRankShared || root != 0); };
  auto done = [&](ncclResult_t result, const std::string& what, bool direct = true) {
    if (result != ncclSuccess) {
      fprintf(stderr, "rank %d: %s: %s\n", rank, what.c_str(), ncclGetLastError(comm));
      wrong += 1000;
    } else if ((lastAlgorithm(comm) == "direct") != direct) {
      fprintf(stderr, "rank %d: %s ran %s\n", rank, what.c_str(), lastAlgorithm(comm).c_str());
      ++wrongPath;
    }
  };
  for (ncclDataType_t type : {ncclFloat32, ncclFloat16, ncclInt8, ncclFloat64})
    for (size_t count : {size_t{1}, size_t{7}, kMostCount})
      for (bool inPlace : {false, true}) {
        const size_t block = count * dataTypeSize(type);
        const int root = ++scenario % n;
        const std::string where = std::string(dataTypeName(type)) + " x" + std::to_string(count) +
                                  (inPlace ? " in place" : "") + " root " + std::to_string(root);
        ++seed;
        {
          char* input = inPlace ? recv + rank * block : send;
          fillInput(input, count, rank, type, ncclSum, seed);
          done(ncclAllGather(input, recv, count, type, comm, nullptr), "allgather " + where, everyRankShared);
          for (int r = 0; r < n; ++r)
            wrong += countMismatchesAgainst(
                recv + r * block, count, type, [&](size_t i) { return inputValue(r, i, type, ncclSum, seed); }, 1,
                ncclSum, ("allgather " + where).c_str());
        }
        for (ncclRedOp_t op : {ncclSum, ncclAvg}) {
          fillInput(send, n * count, rank, type, op, seed);
          char* output = inPlace ? send + rank * block : recv;
          done(ncclReduceScatter(send, output, count, type, op, comm, nullptr), "reducescatter " + where,
               everyRankShared);
          wrong += countMismatchesAgainst(
              output, count, type, [&](size_t i) { return expectedReduction(n, rank * count + i, type, op, seed); }, n,
              op, ("reducescatter " + where).c_str());
        }
        {
          fillInput(send, count, rank, type, ncclSum, seed);
          char* output = inPlace ? send : recv;
          done(ncclBroadcast(send, output, count, type, root, comm, nullptr), "broadcast " + where,
               rootedGoesDirect(root));
          wrong += countMismatchesAgainst(
              output, count, type, [&](size_t i) { return inputValue(root, i, type, ncclSum, seed); }, 1, ncclSum,
              ("broadcast " + where).c_str());
        }
        for (ncclRedOp_t op : {ncclSum, ncclMax}) {
          fillInput(send, count, rank, type, op, seed);
          char* output = inPlace ? send : recv;
          done(ncclReduce(send, output, count, type, op, root, comm, nullptr), "reduce " + where,
               everyRankHasADevice && everyRankShared);
          if (rank == root)
            wrong += countMismatchesAgainst(
                output, count, type, [&](size_t i) { return expectedReduction(n, i, type, op, seed); }, n, op,
                ("reduce " + where).c_str());
        }
        {
          // In place a rank's blocks would be overwritten by peers before it sent them: every
          // rank takes the selected algorithm.
          fillInput(send, n * count, rank, type, ncclSum, seed);
          char* output = inPlace ? send : recv;
          done(ncclAlltoAll(send, output, count, type, comm, nullptr), "alltoall " + where,
               everyRankShared && !inPlace);
          for (int q = 0; q < n; ++q)
            wrong += countMismatchesAgainst(
                output + q * block, count, type,
                [&](size_t i) { return inputValue(q, rank * count + i, type, ncclSum, seed); }, 1, ncclSum,
                ("alltoall " + where).c_str());
        }
        {
          fillInput(send, count, rank, type, ncclSum, seed);
          char* input = inPlace && rank == root ? recv + root * block : send;
          if (input != send) memcpy(input, send, block);
          done(ncclGather(input, recv, count, type, root, comm, nullptr), "gather " + where, rootedGoesDirect(root));
          if (rank == root)
            for (int q = 0; q < n; ++q)
              wrong += countMismatchesAgainst(
                  recv + q * block, count, type, [&](size_t i) { return inputValue(q, i, type, ncclSum, seed); }, 1,
                  ncclSum, ("gather " + where).c_str());
        }
        {
          if (rank == root) fillInput(send, n * count, rank, type, ncclSum, seed);
          char* output = inPlace && rank == root ? send + root * block : recv;
          done(ncclScatter(send, output, count, type, root, comm, nullptr), "scatter " + where, rootedGoesDirect(root));
          wrong += countMismatchesAgainst(
              output, count, type, [&](size_t i) { return inputValue(root, rank * count + i, type, ncclSum, seed); }, 1,
              ncclSum, ("scatter " + where).c_str());
        }
      }
  ncclCommDestroy(comm);
  if (plainSend.empty()) {
    ncclMemFree(send);
    ncclMemFree(recv);
  }
  return wrong ? 5 : wrongPath ? 4 : 0;
}

TEST_P(MemAllocRanks, OtherCollectivesWithTheReferenceResultsDirectWhereTheyMay) {
  const int n = GetParam();
  EXPECT_EQ(onEveryRank(n, [&](int rank, const ncclUniqueId& id) { return otherCollectivesGrid(rank, n, id, true); }),
            "");
}

TEST_P(MemAllocRanks, OtherCollectivesWithOneUnsharedBufferTakeTheSelectedAlgorithm) {
  const int n = GetParam();
  EXPECT_EQ(onEveryRank(n, [&](int rank, const ncclUniqueId& id) { return otherCollectivesGrid(rank, n, id, false); }),
            "");
}

// An all-to-all in place on one rank only: that rank cannot take the direct schedule (peers would
// overwrite blocks it has yet to send), and every rank takes the selected algorithm with it.
int allToAllOneRankInPlace(int rank, int n, const ncclUniqueId& id) {
  ncclComm_t comm = commForEveryDirectCall(rank, n, id);
  if (!comm) return 1;
  constexpr size_t count = 4099;
  const size_t block = count * sizeof(float);
  char* send = nullptr;
  char* recv = nullptr;
  if (weftMemAllocHost(reinterpret_cast<void**>(&send), n * block) != ncclSuccess ||
      weftMemAllocHost(reinterpret_cast<void**>(&recv), n * block) != ncclSuccess)
    return 2;
  int status = 0;
  for (int inPlaceRank = 0; inPlaceRank < n && status == 0; ++inPlaceRank) {
    const unsigned seed = 300 + static_cast<unsigned>(inPlaceRank);
    fillInput(send, n * count, rank, ncclFloat32, ncclSum, seed);
    char* output = rank == inPlaceRank ? send : recv;
    const std::string what = "alltoall, rank " + std::to_string(inPlaceRank) + " in place";
    if (ncclAlltoAll(send, output, count, ncclFloat32, comm, nullptr) != ncclSuccess) {
      fprintf(stderr, "rank %d: %s: %s\n", rank, what.c_str(), ncclGetLastError(comm));
      status = 3;
      break;
    }
    size_t wrong = 0;
    for (int q = 0; q < n; ++q)
      wrong += countMismatchesAgainst(
          output + q * block, count, ncclFloat32,
          [&](size_t i) { return inputValue(q, rank * count + i, ncclFloat32, ncclSum, seed); }, 1, ncclSum,
          what.c_str());
    if (wrong) status = 4;
    if (lastAlgorithm(comm) == "direct") {
      fprintf(stderr, "rank %d: %s went direct\n", rank, what.c_str());
      status = 5;
    }
  }
  ncclCommDestroy(comm);
  ncclMemFree(send);
  ncclMemFree(recv);
  return status;
}

TEST_P(MemAllocRanks, AllToAllWithOneRankInPlaceTakesTheSelectedAlgorithmOnEveryRank) {
  const int n = GetParam();
  EXPECT_EQ(onEveryRank(n, [&](int rank, const ncclUniqueId& id) { return allToAllOneRankInPlace(rank, n, id); }), "");
}

// Only the buffers peers read or write need to be shared: an all-gather from a malloc'd input
// into a shared output, and a reduce-scatter from a shared input into a malloc'd output, go
// direct.
int localBuffersAnyMemory(int rank, int n, const ncclUniqueId& id) {
  ncclComm_t comm = commForEveryDirectCall(rank, n, id);
  if (!comm) return 1;
  constexpr size_t count = 4099;
  const size_t block = count * sizeof(float);
  char* shared = nullptr;
  if (weftMemAllocHost(reinterpret_cast<void**>(&shared), n * block) != ncclSuccess) return 2;
  std::vector<char> local(n * block);
  size_t wrong = 0;
  int wrongPath = 0;
  const unsigned seed = 5;
  fillInput(local.data(), count, rank, ncclFloat32, ncclSum, seed);
  if (ncclAllGather(local.data(), shared, count, ncclFloat32, comm, nullptr) != ncclSuccess) return 3;
  wrongPath += lastAlgorithm(comm) != "direct";
  for (int r = 0; r < n; ++r)
    wrong += countMismatchesAgainst(
        shared + r * block, count, ncclFloat32, [&](size_t i) { return inputValue(r, i, ncclFloat32, ncclSum, seed); },
        1, ncclSum, "allgather from malloc'd memory");
  fillInput(shared, n * count, rank, ncclFloat32, ncclSum, seed);
  if (ncclReduceScatter(shared, local.data(), count, ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess) return 3;
  wrongPath += lastAlgorithm(comm) != "direct";
  wrong += countMismatchesAgainst(
      local.data(), count, ncclFloat32,
      [&](size_t i) { return expectedReduction(n, rank * count + i, ncclFloat32, ncclSum, seed); }, n, ncclSum,
      "reducescatter into malloc'd memory");
  ncclCommDestroy(comm);
  ncclMemFree(shared);
  return wrong ? 5 : wrongPath ? 4 : 0;
}

TEST_P(MemAllocRanks, BuffersNoPeerTouchesNeedNotBeShared) {
  const int n = GetParam();
  EXPECT_EQ(onEveryRank(n, [&](int rank, const ncclUniqueId& id) { return localBuffersAnyMemory(rank, n, id); }), "");
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
