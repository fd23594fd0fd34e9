// The direct path on device buffers (runtime/exec/direct_path.h), through the CPU
// implementation of the device seam: each rank exports its device buffers, the peers import them
// (the CPU device's memory is a shared segment, mapped through the fd broker as cuMem handles
// are), and every rank's kernels reduce its chunk straight out of the peers' buffers into every
// peer's result. Where some rank cannot go direct, every rank falls back to the selected
// algorithm, and the device ranks' progress threads stage their calls as they run. Results are
// checked against the reference; the CPU device counts kernels and imports, which tells the two
// paths apart.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "nccl.h"
#include "runtime/comm/communicator.h"
#include "runtime/device/cpu_device.h"
#include "runtime/exec/collective_record.h"
#include "tests/support/multiprocess.h"
#include "tests/support/reference.h"
#include "tests/support/test_device.h"

using namespace weft;
using namespace weft::testing;

namespace {

// Large enough for the direct path at its default threshold (WEFT_DIRECT_MIN_BYTES, 1 MiB).
constexpr size_t kCount = (1u << 18) + 37;

// Every rank's all-reduces of `count` floats over the buffers `allocate` gives (device memory,
// or host memory for a rank playing a host-memory peer), in place and not, Sum and Avg; the
// number of wrong elements.
size_t allReduceOnce(TestDevice& device, ncclComm_t comm, int rank, int n, bool onDevice, size_t count = kCount) {
  cudaStream_t stream = device.createStream();
  size_t wrong = 0;
  unsigned seed = 40 + static_cast<unsigned>(count % 1000);
  for (ncclRedOp_t op : {ncclSum, ncclAvg})
    for (bool inPlace : {false, true}) {
      ++seed;
      const std::string label = std::string(op == ncclSum ? "sum" : "avg") + (inPlace ? " in place" : "");
      if (onDevice) {
        StreamChecks checks(device, rank);
        char* send = checks.input(stream, count, ncclFloat32, op, seed);
        char* recv = inPlace ? send : checks.deviceBuffer(count * sizeof(float));
        if (ncclAllReduce(send, recv, count, ncclFloat32, op, comm, stream) != ncclSuccess) return 1000;
        checks.expect(
            stream, recv, count, ncclFloat32, [=](size_t i) { return expectedReduction(n, i, ncclFloat32, op, seed); },
            n, op, label);
        device.synchronize(stream);
        wrong += checks.mismatches();
      } else {
        std::vector<float> send(count), recv(count);
        fillInput(send.data(), count, rank, ncclFloat32, op, seed);
        float* out = inPlace ? send.data() : recv.data();
        if (ncclAllReduce(send.data(), out, count, ncclFloat32, op, comm, stream) != ncclSuccess) return 1000;
        wrong += countMismatches(out, count, n, ncclFloat32, op, seed, label.c_str());
      }
    }
  device.destroyStream(stream);
  return wrong;
}

// One rank process: its CPU device (exportable or not), the calls, and how the device was used.
struct RankResult {
  size_t wrong = 0;
  uint64_t kernels = 0;
  uint64_t imports = 0;
  size_t allocationsBeforeDestroy = 0;  // device allocations live after the calls (the caller's are freed)
  size_t allocationsAfterDestroy = 0;
};

struct RankSetup {
  bool onDevice = true;                   // else the rank's buffers are host memory
  bool exportable = true;                 // CpuDevice::setExportable: nothing of this device can be exported
  bool importable = true;                 // CpuDevice::setImportable
  bool plain = false;                     // its buffers cudaMalloc-like (not exportable), through its own buffers
  std::vector<size_t> counts = {kCount};  // the all-reduces' sizes, in order
  // Most device allocations left after the calls (the own buffers: the caller's are freed).
  size_t mostAllocationsLeft = SIZE_MAX;
};

RankResult runRank(int rank, int n, const ncclUniqueId& id, RankSetup setup) {
  CpuTestDevice device;
  device.cpu().setExportable(setup.exportable);
  device.cpu().setImportable(setup.importable);
  device.allocatePlain(setup.plain);
  RankResult result;
  ncclComm_t comm;
  if (ncclCommInitRank(&comm, n, id, rank) != ncclSuccess) return {2000, 0, 0};
  for (size_t count : setup.counts) result.wrong += allReduceOnce(device, comm, rank, n, setup.onDevice, count);
  ncclResult_t asyncError = ncclSuccess;
  ncclCommGetAsyncError(comm, &asyncError);
  if (asyncError != ncclSuccess) {
    fprintf(stderr, "rank %d: asynchronous error: %s\n", rank, ncclGetLastError(comm));
    result.wrong += 1100;
  }
  result.allocationsBeforeDestroy = device.cpu().deviceAllocationCount();
  if (result.allocationsBeforeDestroy > setup.mostAllocationsLeft) {
    fprintf(stderr, "rank %d: %zu device allocations of its own\n", rank, result.allocationsBeforeDestroy);
    result.wrong += 1300;
  }
  if (ncclCommDestroy(comm) != ncclSuccess) result.wrong += 1200;
  result.allocationsAfterDestroy = device.cpu().deviceAllocationCount();
  result.kernels = device.cpu().kernelLaunches();
  result.imports = device.cpu().imports();
  return result;
}

// Exit status of a rank: 0 when right and the path was as `expectDirect` says (the direct path
// maps the peers' buffers and launches kernels; the staged one launches none).
int verdict(int rank, const RankResult& r, bool expectDirect) {
  if (r.wrong) {
    fprintf(stderr, "rank %d: %zu wrong\n", rank, r.wrong);
    return 1;
  }
  if (r.allocationsAfterDestroy != 0) {
    fprintf(stderr, "rank %d: %zu device allocations left after ncclCommDestroy\n", rank, r.allocationsAfterDestroy);
    return 3;
  }
  const bool direct = r.kernels > 0 && r.imports > 0;
  if (expectDirect ? !direct : r.kernels != 0) {
    fprintf(stderr, "rank %d: %llu kernels, %llu imports; expected the %s path\n", rank, (unsigned long long)r.kernels,
            (unsigned long long)r.imports, expectDirect ? "direct" : "staged");
    return 2;
  }
  return 0;
}

// Runs `n` rank processes, rank r set up by setupFor(r); "" when every rank was right and took
// the path `expectDirect` says, else what went wrong. `everyCall`: the direct path may take
// every all-reduce, however small (WEFT_DIRECT_MIN_BYTES=1, no one-shot).
std::string runRanks(int n, const std::function<RankSetup(int rank)>& setupFor, bool expectDirect,
                     bool everyCall = false) {
  return describeFailures(runRankProcesses(
      n,
      [&](int rank, const ncclUniqueId& id) {
        if (everyCall) {
          setenv("WEFT_DIRECT_MIN_BYTES", "1", 1);
          setenv("WEFT_ONE_SHOT_MAX_BYTES", "0", 1);
        }
        return verdict(rank, runRank(rank, n, id, setupFor(rank)), expectDirect);
      },
      120));
}

class DeviceDirectRanks : public ::testing::TestWithParam<int> {};

// Device buffers on every rank, all exportable: the direct path, with kernels on the device.
TEST_P(DeviceDirectRanks, ReduceStraightOutOfThePeersDeviceBuffers) {
  EXPECT_EQ(runRanks(
                GetParam(), [](int) { return RankSetup{}; }, true),
            "");
}

// The whole stream-ordered grid (every collective, type, operator, size and placement) with the
// direct path taking every call it can (every collective; EachCollectiveOfTheDirectPathGoesDirect
// checks each call's path): chunks of one element, empty chunks, integer and 8-bit types. `plain`: on memory that
// cannot be exported, so that every direct call goes through the communicator's own buffers.
std::string gridGoesDirect(int n, bool plain) {
  return describeFailures(runRankProcesses(
      n,
      [&](int rank, const ncclUniqueId& id) {
        setenv("WEFT_DIRECT_MIN_BYTES", "1", 1);
        setenv("WEFT_ONE_SHOT_MAX_BYTES", "0", 1);
        CpuTestDevice device;
        device.allocatePlain(plain);
        RankResult r;
        r.wrong = runStreamOrderedGrid(device, rank, n, id);
        r.kernels = device.cpu().kernelLaunches();
        r.imports = device.cpu().imports();
        return verdict(rank, r, true);
      },
      300));
}

TEST_P(DeviceDirectRanks, EveryTypeAndPlacementOfTheGridGoesDirect) {
  EXPECT_EQ(gridGoesDirect(GetParam(), false), "");
}

TEST_P(DeviceDirectRanks, TheGridOnMemoryThatCannotBeExportedGoesThroughOwnBuffers) {
  EXPECT_EQ(gridGoesDirect(GetParam(), true), "");
}

// Buffers that cannot be exported (cudaMalloc's, a caching allocator's) on every rank: each
// rank copies its input into device buffers of its own that the peers map, and its result out
// of them; still direct. The sizes grow then shrink, so the own buffers grow once, and the
// first call's sizes sit below the direct path's default threshold.
TEST_P(DeviceDirectRanks, ThroughOwnBuffersWhereTheMemoryCannotBeExported) {
  RankSetup setup;
  setup.plain = true;
  setup.counts = {1000, 3 * kCount, 7};
  EXPECT_EQ(runRanks(
                GetParam(), [&](int) { return setup; }, true, /*everyCall=*/true),
            "");
}

// One rank on memory it cannot export, the others on ncclMemAlloc's: all direct, each the way
// its memory allows.
TEST_P(DeviceDirectRanks, OneRankThroughOwnBuffersTheOthersOnTheirs) {
  const int n = GetParam();
  auto setupFor = [&](int rank) {
    RankSetup setup;
    setup.plain = rank == n - 1;
    return setup;
  };
  EXPECT_EQ(runRanks(n, setupFor, true), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, DeviceDirectRanks, ::testing::Values(2, 3));

// Nothing of one rank's device can be exported, not even buffers of its own (a driver without
// shareable handles): no rank goes direct, and the device ranks stage their calls as they run.
TEST(DeviceDirect, ARankThatCannotExportMakesEveryRankStage) {
  auto setupFor = [](int rank) {
    RankSetup setup;
    setup.exportable = rank != 1;
    // Three calls: the own buffers are tried once (one allocation, kept until the communicator
    // goes: freeing may wait for the device), not once per call.
    setup.counts = {kCount, kCount + 7, kCount + 9};
    setup.mostAllocationsLeft = 1;
    return setup;
  };
  EXPECT_EQ(runRanks(3, setupFor, false), "");
}

// One rank cannot map its peers' buffers (CUDA IPC refused by a sandbox, a device that cannot
// reach another): the ranks learn it in the second exchange, and every rank stages.
TEST(DeviceDirect, ARankThatCannotMapItsPeersMakesEveryRankStage) {
  auto setupFor = [](int rank) {
    RankSetup setup;
    setup.importable = rank != 2;
    return setup;
  };
  EXPECT_EQ(runRanks(3, setupFor, false), "");
}

// A rank on host memory and ranks on device memory in one all-reduce: kernels cannot read the
// host rank's buffers (nor the host its peers'), so every rank takes the selected algorithm.
TEST(DeviceDirect, HostAndDeviceRanksTogetherTakeTheStagedPath) {
  auto setupFor = [](int rank) {
    RankSetup setup;
    setup.onDevice = rank != 0;
    return setup;
  };
  EXPECT_EQ(runRanks(2, setupFor, false), "");
}

// Ranks of one process (ncclCommInitAll) in one group: each maps the others' buffers too, once:
// the second round on the same buffers maps nothing new.
TEST(DeviceDirect, RanksOfOneProcessInOneGroupMapEachBufferOnce) {
  constexpr int n = 3;
  constexpr size_t count = 2 * kCount;  // two-byte elements: as many bytes as the other tests
  OneProcessRanks ranks(n);
  ASSERT_TRUE(ranks.ok);
  std::vector<StreamChecks> checks = ranks.checksPerRank();
  std::vector<char*> buffers(n);
  for (int round = 0; round < 2; ++round) {
    const unsigned seed = 7 + round;
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    for (int r = 0; r < n; ++r) {
      if (round == 0) {
        buffers[r] = checks[r].input(ranks.streams[r], count, ncclBfloat16, ncclMax, seed);
      } else {  // the same buffer, a new input, written in stream order
        std::vector<char> input(count * dataTypeSize(ncclBfloat16));
        fillInput(input.data(), count, r, ncclBfloat16, ncclMax, seed);
        ranks.cpu.write(ranks.streams[r], buffers[r], std::move(input));
      }
      ASSERT_EQ(ncclAllReduce(buffers[r], buffers[r], count, ncclBfloat16, ncclMax, ranks.comms[r], ranks.streams[r]),
                ncclSuccess);
    }
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
    for (int r = 0; r < n; ++r)
      checks[r].expect(
          ranks.streams[r], buffers[r], count, ncclBfloat16,
          [=](size_t i) { return expectedReduction(n, i, ncclBfloat16, ncclMax, seed); }, n, ncclMax,
          "bf16 max in place, round " + std::to_string(round));
    for (int r = 0; r < n; ++r) {
      ranks.cpu.synchronize(ranks.streams[r]);
      EXPECT_EQ(checks[r].mismatches(), 0u) << "rank " << r << ", round " << round;
    }
    EXPECT_GT(ranks.device().kernelLaunches(), 0u);
    // Each rank maps each peer's allocation once (in place: send and receive are one).
    EXPECT_EQ(ranks.device().imports(), static_cast<uint64_t>(n * (n - 1))) << "round " << round;
  }
}

// A group of two all-reduces per rank on memory that cannot be exported, the second reading the
// first's result: the first result leaves the own buffers (into the caller's) before the second
// call copies its input in. Max over identical inputs is the input: both results are exact.
TEST(DeviceDirect, ChainedCallsOfOneGroupThroughOwnBuffers) {
  constexpr int n = 2;
  OneProcessRanks ranks(n, /*plain=*/true);
  ASSERT_TRUE(ranks.ok);
  std::vector<StreamChecks> checks = ranks.checksPerRank();
  std::vector<char*> first(n), second(n);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < n; ++r) {
    char* input = checks[r].input(ranks.streams[r], kCount, ncclFloat32, ncclMax, 11);
    first[r] = checks[r].deviceBuffer(kCount * sizeof(float));
    second[r] = checks[r].deviceBuffer(kCount * sizeof(float));
    ASSERT_EQ(ncclAllReduce(input, first[r], kCount, ncclFloat32, ncclMax, ranks.comms[r], ranks.streams[r]),
              ncclSuccess);
    ASSERT_EQ(ncclAllReduce(first[r], second[r], kCount, ncclFloat32, ncclMax, ranks.comms[r], ranks.streams[r]),
              ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  auto expected = [](size_t i) { return expectedReduction(n, i, ncclFloat32, ncclMax, 11); };
  for (int r = 0; r < n; ++r) {
    checks[r].expect(ranks.streams[r], first[r], kCount, ncclFloat32, expected, n, ncclMax, "first");
    checks[r].expect(ranks.streams[r], second[r], kCount, ncclFloat32, expected, n, ncclMax, "second, of the first");
  }
  for (int r = 0; r < n; ++r) {
    ranks.cpu.synchronize(ranks.streams[r]);
    EXPECT_EQ(checks[r].mismatches(), 0u) << "rank " << r;
  }
  EXPECT_GT(ranks.device().kernelLaunches(), 0u);
  EXPECT_EQ(ranks.device().imports(), static_cast<uint64_t>(n * (n - 1))) << "each rank's own buffers, mapped once";
}

// Every collective of the direct path but the all-reduce, in and out of place, on 3 ranks of one
// process, on exportable device memory and on memory that cannot be exported (then through the
// communicator's own buffers): the results, and that the record names the direct algorithm.
TEST(DeviceDirect, EachCollectiveOfTheDirectPathGoesDirect) {
  constexpr int n = 3, root = 1;
  const size_t block = kCount * sizeof(float);
  for (bool plain : {false, true}) {
    OneProcessRanks ranks(n, plain);
    ASSERT_TRUE(ranks.ok);
    unsigned seed = 90;
    for (Collective collective : {Collective::AllGather, Collective::ReduceScatter, Collective::Broadcast,
                                  Collective::Reduce, Collective::AllToAll, Collective::Gather, Collective::Scatter})
      for (bool inPlace : {false, true}) {
        ++seed;
        const std::string label = std::string(collectiveName(collective)) + (inPlace ? " in place" : "") +
                                  (plain ? ", through own buffers" : "");
        const ncclRedOp_t op = collective == Collective::ReduceScatter ? ncclAvg : ncclSum;
        std::vector<StreamChecks> checks = ranks.checksPerRank();
        std::vector<char*> results(n);
        // An all-to-all in place goes through the own buffers even on memory that can be exported
        // (its direct schedule needs the buffers apart); no other call here makes them.
        const bool makesOwnBuffers = !plain && collective == Collective::AllToAll && inPlace;
        for (int r = 0; r < n && makesOwnBuffers; ++r)
          EXPECT_EQ(ranks.comms[r]->direct.ownDevice.base, nullptr) << "rank " << r << ": " << label;
        // In a group the calls reach the streams at ncclGroupEnd: the results are read after it.
        ASSERT_EQ(ncclGroupStart(), ncclSuccess);
        for (int r = 0; r < n; ++r) {
          cudaStream_t s = ranks.streams[r];
          StreamChecks& check = checks[r];
          ncclComm_t comm = ranks.comms[r];
          switch (collective) {
            case Collective::AllGather: {
              char* recv = results[r] = check.deviceBuffer(n * block);
              char* send = check.input(s, kCount, ncclFloat32, op, seed);
              if (inPlace) {
                ranks.cpu.copy(s, recv + r * block, send, block);
                send = recv + r * block;
              }
              ASSERT_EQ(ncclAllGather(send, recv, kCount, ncclFloat32, comm, s), ncclSuccess);
              break;
            }
            case Collective::ReduceScatter: {
              char* send = check.input(s, n * kCount, ncclFloat32, op, seed);
              char* recv = results[r] = inPlace ? send + r * block : check.deviceBuffer(block);
              ASSERT_EQ(ncclReduceScatter(send, recv, kCount, ncclFloat32, op, comm, s), ncclSuccess);
              break;
            }
            case Collective::Broadcast: {
              char* send = check.input(s, kCount, ncclFloat32, op, seed);
              char* recv = results[r] = inPlace ? send : check.deviceBuffer(block);
              ASSERT_EQ(ncclBroadcast(send, recv, kCount, ncclFloat32, root, comm, s), ncclSuccess);
              break;
            }
            case Collective::Reduce: {
              char* send = check.input(s, kCount, ncclFloat32, op, seed);
              char* recv = results[r] = inPlace ? send : check.deviceBuffer(block);
              ASSERT_EQ(ncclReduce(send, recv, kCount, ncclFloat32, op, root, comm, s), ncclSuccess);
              break;
            }
            case Collective::AllToAll: {
              char* send = check.input(s, n * kCount, ncclFloat32, op, seed);
              char* recv = results[r] = inPlace ? send : check.deviceBuffer(n * block);
              ASSERT_EQ(ncclAlltoAll(send, recv, kCount, ncclFloat32, comm, s), ncclSuccess);
              break;
            }
            case Collective::Gather: {
              char* recv = results[r] = check.deviceBuffer(n * block);
              char* send = check.input(s, kCount, ncclFloat32, op, seed);
              if (inPlace && r == root) {
                ranks.cpu.copy(s, recv + r * block, send, block);
                send = recv + r * block;
              }
              ASSERT_EQ(ncclGather(send, recv, kCount, ncclFloat32, root, comm, s), ncclSuccess);
              break;
            }
            default: {
              char* send = check.input(s, n * kCount, ncclFloat32, op, seed, root);
              char* recv = results[r] = inPlace && r == root ? send + r * block : check.deviceBuffer(block);
              ASSERT_EQ(ncclScatter(send, recv, kCount, ncclFloat32, root, comm, s), ncclSuccess);
            }
          }
        }
        ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
        for (int r = 0; r < n; ++r) {
          cudaStream_t s = ranks.streams[r];
          switch (collective) {
            case Collective::AllGather:
              for (int q = 0; q < n; ++q)
                checks[r].expect(
                    s, results[r] + q * block, kCount, ncclFloat32,
                    [=](size_t i) { return inputValue(q, i, ncclFloat32, op, seed); }, 1, ncclSum, label);
              break;
            case Collective::ReduceScatter:
              checks[r].expect(
                  s, results[r], kCount, ncclFloat32,
                  [=](size_t i) { return expectedReduction(n, r * kCount + i, ncclFloat32, op, seed); }, n, op, label);
              break;
            case Collective::Broadcast:
              checks[r].expect(
                  s, results[r], kCount, ncclFloat32,
                  [=](size_t i) { return inputValue(root, i, ncclFloat32, op, seed); }, 1, ncclSum, label);
              break;
            case Collective::Reduce:
              if (r == root)
                checks[r].expect(
                    s, results[r], kCount, ncclFloat32,
                    [=](size_t i) { return expectedReduction(n, i, ncclFloat32, op, seed); }, n, op, label);
              break;
            case Collective::AllToAll:
              for (int q = 0; q < n; ++q)
                checks[r].expect(
                    s, results[r] + q * block, kCount, ncclFloat32,
                    [=](size_t i) { return inputValue(q, r * kCount + i, ncclFloat32, op, seed); }, 1, ncclSum, label);
              break;
            case Collective::Gather:
              if (r == root)
                for (int q = 0; q < n; ++q)
                  checks[r].expect(
                      s, results[r] + q * block, kCount, ncclFloat32,
                      [=](size_t i) { return inputValue(q, i, ncclFloat32, op, seed); }, 1, ncclSum, label);
              break;
            default:
              checks[r].expect(
                  s, results[r], kCount, ncclFloat32,
                  [=](size_t i) { return inputValue(root, r * kCount + i, ncclFloat32, op, seed); }, 1, ncclSum, label);
          }
        }
        for (int r = 0; r < n; ++r) {
          ranks.cpu.synchronize(ranks.streams[r]);
          EXPECT_EQ(checks[r].mismatches(), 0u) << "rank " << r << ": " << label;
          const std::vector<const CollectiveRecord*> entries = ranks.comms[r]->exec.records.entries();
          ASSERT_FALSE(entries.empty());
          EXPECT_STREQ(entries.back()->algorithm, "direct") << "rank " << r << ": " << label;
          if (makesOwnBuffers) {
            EXPECT_NE(ranks.comms[r]->direct.ownDevice.base, nullptr) << "rank " << r << ": " << label;
          }
        }
      }
  }
}

// Only the buffers peers read or write must be exportable: an all-gather from memory that cannot
// be exported (cudaMalloc's) into ncclMemAlloc's goes direct on the caller's buffers, with no
// own buffers allocated.
TEST(DeviceDirect, BuffersNoPeerTouchesMayBeAnyDeviceMemory) {
  constexpr int n = 3;
  const size_t block = kCount * sizeof(float);
  OneProcessRanks ranks(n);
  ASSERT_TRUE(ranks.ok);
  std::vector<StreamChecks> checks = ranks.checksPerRank();
  std::vector<char*> outputs(n);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < n; ++r) {
    ranks.cpu.allocatePlain(true);
    char* input = checks[r].input(ranks.streams[r], kCount, ncclFloat32, ncclSum, 3);
    ranks.cpu.allocatePlain(false);
    outputs[r] = checks[r].deviceBuffer(n * block);
    ASSERT_EQ(ncclAllGather(input, outputs[r], kCount, ncclFloat32, ranks.comms[r], ranks.streams[r]), ncclSuccess);
  }
  const size_t allocations = ranks.device().deviceAllocationCount();
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < n; ++r)
    for (int q = 0; q < n; ++q)
      checks[r].expect(
          ranks.streams[r], outputs[r] + q * block, kCount, ncclFloat32,
          [=](size_t i) { return inputValue(q, i, ncclFloat32, ncclSum, 3); }, 1, ncclSum, "allgather");
  for (int r = 0; r < n; ++r) {
    ranks.cpu.synchronize(ranks.streams[r]);
    EXPECT_EQ(checks[r].mismatches(), 0u) << "rank " << r;
    const std::vector<const CollectiveRecord*> entries = ranks.comms[r]->exec.records.entries();
    ASSERT_FALSE(entries.empty());
    EXPECT_STREQ(entries.back()->algorithm, "direct") << "rank " << r;
  }
  EXPECT_EQ(ranks.device().deviceAllocationCount(), allocations) << "own device buffers were allocated";
  // Each rank maps each peer's output only (its input no peer reads).
  EXPECT_EQ(ranks.device().imports(), static_cast<uint64_t>(n * (n - 1)));
}

}  // namespace
