// No leaks across communicator lifetimes: what a trainer does thousands of times (a fresh unique
// id, init, a collective, destroy; a split of a long-lived communicator and its destroy;
// ncclMemAlloc's host buffers used by a collective and freed) must
// leave each rank process holding what it held before: the same file descriptors, threads and
// mappings, and resident memory that stops growing. Each rank measures itself after a few
// warm-up loops (allocator pools, the broker's first use) and again after WEFT_LEAK_LOOPS loops
// (default 50; the slow label runs 1000).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "nccl.h"
#include "runtime/comm/communicator.h"
#include "tests/support/multiprocess.h"
#include "weft/weft.h"

using namespace weft::testing;

namespace {

constexpr int kRanks = 4;
constexpr int kWarmUpLoops = 5;
// Resident memory may grow by a page here and there (the allocator's arenas settle); a
// communicator's worth per loop (its rings alone are hundreds of KiB) may not.
constexpr int64_t kResidentSlackKiB = 2048;
constexpr int kMappingSlack = 4;

int leakLoops() { return countFromEnv("WEFT_LEAK_LOOPS", 50); }

struct Usage {
  int fds, threads, mappings;
  int64_t residentKiB;
};

Usage usageNow() { return {openFileDescriptors(), threadsInThisProcess(), memoryMappings(), residentKiB()}; }

// Rank exit codes 40-43: fds, threads, mappings, resident memory grew; the rank prints which.
int compareUsage(int rank, const Usage& before, const Usage& after, int loops) {
  auto report = [&](const char* what, long long b, long long a) {
    std::fprintf(stderr, "rank %d: %s %lld before, %lld after %d loops\n", rank, what, b, a, loops);
  };
  if (after.fds != before.fds) return report("open fds", before.fds, after.fds), 40;
  if (after.threads != before.threads) return report("threads", before.threads, after.threads), 41;
  if (kUnderMemorySanitizer) return 0;  // its quarantine and shadow mappings grow by design
  if (after.mappings > before.mappings + kMappingSlack) return report("mappings", before.mappings, after.mappings), 42;
  if (after.residentKiB > before.residentKiB + kResidentSlackKiB)
    return report("resident KiB", before.residentKiB, after.residentKiB), 43;
  return 0;
}

bool sumIsRight(ncclComm_t comm, int rank, int nranks) {
  std::vector<int> values(1024, rank);
  if (ncclAllReduce(values.data(), values.data(), values.size(), ncclInt32, ncclSum, comm, nullptr) != ncclSuccess)
    return false;
  for (int v : values)
    if (v != nranks * (nranks - 1) / 2) return false;
  return true;
}

// One trainer restart: rank 0 makes a unique id, the long-lived `world` carries it to the
// others (ncclBroadcast of its bytes), all init, all-reduce, finalize and destroy.
int freshCommunicatorLoop(ncclComm_t world, int rank) {
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (rank == 0 && ncclGetUniqueId(&id) != ncclSuccess) return 10;
  if (ncclBroadcast(&id, &id, sizeof id, ncclUint8, 0, world, nullptr) != ncclSuccess) return 11;
  ncclComm_t comm;
  if (ncclCommInitRank(&comm, kRanks, id, rank) != ncclSuccess) return 12;
  if (!sumIsRight(comm, rank, kRanks)) return 13;
  if (ncclCommFinalize(comm) != ncclSuccess || ncclCommDestroy(comm) != ncclSuccess) return 14;
  return 0;
}

// PyTorch's new_group: a split (half the ranks, the rest NOCOLOR), an all-reduce on it, destroy.
int splitLoop(ncclComm_t world, int rank) {
  ncclComm_t sub = nullptr;
  const bool member = rank % 2 == 0;
  if (ncclCommSplit(world, member ? 1 : NCCL_SPLIT_NOCOLOR, rank, &sub, nullptr) != ncclSuccess) return 20;
  if (!member) return sub == nullptr ? 0 : 21;
  int count = 0, subRank = -1;
  if (ncclCommCount(sub, &count) != ncclSuccess || ncclCommUserRank(sub, &subRank) != ncclSuccess) return 22;
  if (!sumIsRight(sub, subRank, count)) return 23;
  return ncclCommDestroy(sub) == ncclSuccess ? 0 : 24;
}

// ncclMemAlloc's host memory (weftMemAllocHost), large enough for the direct path (peers map each other's buffers),
// used by one all-reduce and freed. Peers used to keep their mappings of a freed buffer until
// the communicator went: 2 MiB per peer and loop.
int memAllocLoop(ncclComm_t world, int rank) {
  constexpr size_t kCount = (1 << 20) / sizeof(float);  // WEFT_DIRECT_MIN_BYTES' default
  void* send = nullptr;
  void* recv = nullptr;
  if (weftMemAllocHost(&send, kCount * sizeof(float)) != ncclSuccess) return 30;
  if (weftMemAllocHost(&recv, kCount * sizeof(float)) != ncclSuccess) return 31;
  auto* in = static_cast<float*>(send);
  for (size_t i = 0; i < kCount; ++i) in[i] = static_cast<float>(rank + i % 7);
  if (ncclAllReduce(send, recv, kCount, ncclFloat32, ncclSum, world, nullptr) != ncclSuccess) return 32;
  const auto* out = static_cast<const float*>(recv);
  for (size_t i = 0; i < kCount; ++i)
    if (out[i] != static_cast<float>(kRanks * (kRanks - 1) / 2 + kRanks * (i % 7))) return 33;
  const int peer = (rank + 1) % kRanks;
  if (world->direct.peerSendBuffers.empty() || !world->direct.peerSendBuffers[peer]) return 34;  // not direct
  if (ncclMemFree(send) != ncclSuccess || ncclMemFree(recv) != ncclSuccess) return 35;
  return 0;
}

void expectNoGrowth(int (*loop)(ncclComm_t, int)) {
  const int loops = leakLoops();
  auto outcomes = runRankProcesses(
      kRanks,
      [&](int rank, const ncclUniqueId& id) {
        ncclComm_t world;
        if (ncclCommInitRank(&world, kRanks, id, rank) != ncclSuccess) return 1;
        for (int i = 0; i < kWarmUpLoops; ++i)
          if (int failed = loop(world, rank)) return failed;
        const Usage before = usageNow();
        for (int i = 0; i < loops; ++i)
          if (int failed = loop(world, rank)) return failed;
        const Usage after = usageNow();
        if (int grew = compareUsage(rank, before, after, loops)) return grew;
        return ncclCommDestroy(world) == ncclSuccess ? 0 : 2;
      },
      60 + loops);
  EXPECT_EQ(describeFailures(outcomes), "") << "40 fds, 41 threads, 42 mappings, 43 resident memory grew (see stderr)";
}

TEST(NoLeaks, FreshUniqueIdInitAllReduceDestroy) { expectNoGrowth(freshCommunicatorLoop); }

TEST(NoLeaks, SplitAllReduceDestroy) { expectNoGrowth(splitLoop); }

TEST(NoLeaks, MemAllocAllReduceMemFree) { expectNoGrowth(memAllocLoop); }

}  // namespace
