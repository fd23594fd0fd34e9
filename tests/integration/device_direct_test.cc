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
#include "weft/weft.h"

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
// checks each call's path): chunks of one element, empty chunks, integer and 8-bit types.
// plain(rank): on memory that cannot be exported, so that every direct call of that rank goes
// through the communicator's own buffers. `ownBufferBytes`: WEFT_OWN_DEVICE_BUFFER_BYTES, 0 for
// the default; with it, some strided pieces must have moved their blocks in 2-D copies.
std::string gridGoesDirect(int n, const std::function<bool(int rank)>& plain, size_t ownBufferBytes = 0) {
  return describeFailures(runRankProcesses(
      n,
      [&](int rank, const ncclUniqueId& id) {
        setenv("WEFT_DIRECT_MIN_BYTES", "1", 1);
        setenv("WEFT_ONE_SHOT_MAX_BYTES", "0", 1);
        if (ownBufferBytes) setenv("WEFT_OWN_DEVICE_BUFFER_BYTES", std::to_string(ownBufferBytes).c_str(), 1);
        CpuTestDevice device;
        device.allocatePlain(plain(rank));
        RankResult r;
        r.wrong = runStreamOrderedGrid(device, rank, n, id);
        r.kernels = device.cpu().kernelLaunches();
        r.imports = device.cpu().imports();
        if (ownBufferBytes && device.cpu().streamCopies2D() == 0) {
          fprintf(stderr, "rank %d: no strided piece moved its blocks in a 2-D copy\n", rank);
          return 9;
        }
        return verdict(rank, r, true);
      },
      300));
}

TEST_P(DeviceDirectRanks, EveryTypeAndPlacementOfTheGridGoesDirect) {
  EXPECT_EQ(gridGoesDirect(GetParam(), [](int) { return false; }), "");
}

TEST_P(DeviceDirectRanks, TheGridOnMemoryThatCannotBeExportedGoesThroughOwnBuffers) {
  EXPECT_EQ(gridGoesDirect(GetParam(), [](int) { return true; }), "");
}

// The grid with own device buffers of 64 KiB, on memory that cannot be exported: its 8-byte
// all-gathers and reduce-scatters (4099 elements a block) are larger and go direct in two strided
// pieces through the own buffers, every type and placement (tools/scripts/gpu-check.sh step 4f on
// a GPU). Ranks with strided buffers of their own beside them: DeviceDirectPieces (the grid's
// fresh buffers would soon outnumber the mappings a communicator keeps).
TEST_P(DeviceDirectRanks, TheGridInPiecesOfTheOwnBuffersGoesDirect) {
  EXPECT_EQ(gridGoesDirect(
                GetParam(), [](int) { return true; }, 64 << 10),
            "");
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

// Where a rank's calls go: its device, communicator and stream, its rank and the rank count.
struct RankSide {
  TestDevice& device;
  ncclComm_t comm;
  cudaStream_t stream;
  int rank;
  int n;
};
RankSide sideOf(OneProcessRanks& ranks, int r) { return {ranks.cpu, ranks.comms[r], ranks.streams[r], r, ranks.n}; }

// A call: blocks of `count` floats (the all-reduce's, broadcast's and reduce's whole buffer).
struct CallSpec {
  Collective collective;
  bool inPlace;
  ncclRedOp_t op;
  unsigned seed;
  int root;
  size_t count;
};

// The rank's call on device buffers it allocates, its input written on its stream first (or,
// with `hostInputs` and out of place, its input in host memory kept there); the buffer its result
// lands in (null where the call failed).
char* callCollective(const RankSide& side, StreamChecks& check, const CallSpec& c,
                     std::vector<std::vector<char>>* hostInputs = nullptr) {
  const int n = side.n, r = side.rank, root = c.root;
  const size_t count = c.count, block = count * sizeof(float);
  cudaStream_t s = side.stream;
  ncclComm_t comm = side.comm;
  auto input = [&](size_t elements, int owner = -1) -> char* {
    if (!hostInputs || c.inPlace) return check.input(s, elements, ncclFloat32, c.op, c.seed, owner);
    hostInputs->emplace_back(elements * sizeof(float));
    fillInput(hostInputs->back().data(), elements, owner < 0 ? r : owner, ncclFloat32, c.op, c.seed);
    return hostInputs->back().data();
  };
  char *send = nullptr, *recv = nullptr;
  ncclResult_t result = ncclInternalError;
  switch (c.collective) {
    case Collective::AllGather:
    case Collective::Gather:
      recv = check.deviceBuffer(n * block);
      send = input(count);
      if (c.inPlace && (c.collective == Collective::AllGather || r == root)) {
        side.device.copy(s, recv + r * block, send, block);
        send = recv + r * block;
      }
      result = c.collective == Collective::AllGather ? ncclAllGather(send, recv, count, ncclFloat32, comm, s)
                                                     : ncclGather(send, recv, count, ncclFloat32, root, comm, s);
      break;
    case Collective::ReduceScatter:
      send = input(n * count);
      recv = c.inPlace ? send + r * block : check.deviceBuffer(block);
      result = ncclReduceScatter(send, recv, count, ncclFloat32, c.op, comm, s);
      break;
    case Collective::AllToAll:
      send = input(n * count);
      recv = c.inPlace ? send : check.deviceBuffer(n * block);
      result = ncclAlltoAll(send, recv, count, ncclFloat32, comm, s);
      break;
    case Collective::Scatter:
      send = input(n * count, root);
      recv = c.inPlace && r == root ? send + r * block : check.deviceBuffer(block);
      result = ncclScatter(send, recv, count, ncclFloat32, root, comm, s);
      break;
    default:  // all-reduce, broadcast, reduce
      send = input(count);
      recv = c.inPlace ? send : check.deviceBuffer(block);
      result = c.collective == Collective::AllReduce ? ncclAllReduce(send, recv, count, ncclFloat32, c.op, comm, s)
               : c.collective == Collective::Broadcast
                   ? ncclBroadcast(send, recv, count, ncclFloat32, root, comm, s)
                   : ncclReduce(send, recv, count, ncclFloat32, c.op, root, comm, s);
  }
  EXPECT_EQ(result, ncclSuccess) << collectiveName(c.collective) << ", rank " << r;
  return result == ncclSuccess ? recv : nullptr;
}

// Queues the reads of the rank's result of callCollective against the reference.
void expectResult(const RankSide& side, StreamChecks& check, const CallSpec& c, const char* result,
                  const std::string& label) {
  const int n = side.n, r = side.rank, root = c.root;
  const size_t count = c.count, block = count * sizeof(float);
  const ncclRedOp_t op = c.op;
  const unsigned seed = c.seed;
  cudaStream_t s = side.stream;
  auto inputOf = [&](int owner, size_t first) {
    return [=](size_t i) { return inputValue(owner, first + i, ncclFloat32, op, seed); };
  };
  switch (c.collective) {
    case Collective::AllGather:
    case Collective::Gather:
      if (c.collective == Collective::AllGather || r == root)
        for (int q = 0; q < n; ++q)
          check.expect(s, result + q * block, count, ncclFloat32, inputOf(q, 0), 1, ncclSum, label);
      break;
    case Collective::AllToAll:
      for (int q = 0; q < n; ++q)
        check.expect(s, result + q * block, count, ncclFloat32, inputOf(q, r * count), 1, ncclSum, label);
      break;
    case Collective::Broadcast: check.expect(s, result, count, ncclFloat32, inputOf(root, 0), 1, ncclSum, label); break;
    case Collective::Scatter:
      check.expect(s, result, count, ncclFloat32, inputOf(root, r * count), 1, ncclSum, label);
      break;
    case Collective::ReduceScatter:
      check.expect(
          s, result, count, ncclFloat32,
          [=](size_t i) { return expectedReduction(n, r * count + i, ncclFloat32, op, seed); }, n, op, label);
      break;
    default:  // all-reduce; reduce at the root
      if (c.collective == Collective::AllReduce || r == root)
        check.expect(
            s, result, count, ncclFloat32, [=](size_t i) { return expectedReduction(n, i, ncclFloat32, op, seed); }, n,
            op, label);
  }
}

// Every collective of the direct path but the all-reduce, in and out of place, on 3 ranks of one
// process, on exportable device memory and on memory that cannot be exported (then through the
// communicator's own buffers): the results, and that the record names the direct algorithm.
TEST(DeviceDirect, EachCollectiveOfTheDirectPathGoesDirect) {
  constexpr int n = 3, root = 1;
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
        const CallSpec spec{collective, inPlace, op, seed, root, kCount};
        for (int r = 0; r < n; ++r) {
          results[r] = callCollective(sideOf(ranks, r), checks[r], spec);
          ASSERT_NE(results[r], nullptr) << label;
        }
        ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
        for (int r = 0; r < n; ++r) expectResult(sideOf(ranks, r), checks[r], spec, results[r], label);
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

// The pieces a call of kCount floats (a block) is cut into with own device buffers of 256 KiB
// (worked out by hand from runtime/exec/staging_slices.h's rule): an all-reduce's, broadcast's or
// reduce's at most 65536 floats, 5 pieces of 53248 (whole 4 KiB) but the last; a block per rank,
// on 3 ranks at most 21845 of each block, 13 pieces of 20480, on 2 ranks 32768, 9 of 29696.
uint64_t piecesOf(int n, bool everyBlock) { return !everyBlock ? 5 : n == 3 ? 13 : 9; }

// A count whose pieces are all equal, on 3 ranks with own buffers of 256 KiB: 5 x 53248 and
// 13 x 20480. In one process, pieces of unequal size make two ranks write one address of a
// rank's own buffers in consecutive pieces (the chunks move); the direct path's barrier orders
// those writes, but it goes through the shared-memory transport, whose segment each side maps
// at an address of its own, which ThreadSanitizer cannot pair, so it reports a race. Unequal
// pieces run across processes (MixedMemoryGoesDirectInPiecesAcrossProcesses), where it does
// not look.
constexpr size_t kEqualPiecesCount = 266240;

bool everyBlock(Collective c) {
  return c == Collective::AllGather || c == Collective::ReduceScatter || c == Collective::AllToAll ||
         c == Collective::Gather || c == Collective::Scatter;
}

// The communicator's collective records after sequence `after`: those that ran direct and the
// others (the direct path's own exchanges left out).
std::pair<uint64_t, uint64_t> directAndOtherRuns(ncclComm_t comm, uint64_t after) {
  uint64_t direct = 0, other = 0;
  for (const CollectiveRecord* entry : comm->exec.records.entries())
    if (entry->sequence > after && std::string(entry->algorithm) != "direct descriptor exchange")
      ++(std::string(entry->algorithm) == "direct" ? direct : other);
  return {direct, other};
}
uint64_t lastSequenceOf(ncclComm_t comm) {
  const auto entries = comm->exec.records.entries();
  return entries.empty() ? 0 : entries.back()->sequence;
}

constexpr Collective kCutCollectives[] = {Collective::AllReduce, Collective::Broadcast,     Collective::Reduce,
                                          Collective::AllGather, Collective::ReduceScatter, Collective::AllToAll,
                                          Collective::Gather,    Collective::Scatter};

// Calls larger than the communicator's own device buffers (WEFT_OWN_DEVICE_BUFFER_BYTES, here
// 256 KiB) on one host where every rank has a device are cut into pieces that fit
// (runtime/exec/staging_slices.h); every piece goes direct, although each is smaller than
// WEFT_DIRECT_MIN_BYTES (the default, 1 MiB: the whole call is not). A rank on memory that cannot
// be exported copies each piece through its own buffers, a strided piece's blocks in one 2-D
// copy; a rank on ncclMemAlloc's memory goes direct on its own buffers, its peers reaching its
// strided blocks through moved mappings. Placements: all exportable, none, one rank not (ranks
// with strided and with contiguous buffers meet in one call), no rank able to map its peers'
// buffers (every piece staged as it runs, a strided piece's blocks copied to and from its staging
// places in one 2-D copy), and rank 0's inputs in host memory (its pieces staged as they are
// enqueued, strided ones without their stride, the others left in place: every rank must still
// agree to try the direct path, then all stage). Results against the reference, every element
// of the strided buffers checked; each call ran in the pieces expected, on the path expected.
class DeviceDirectPieces : public ::testing::TestWithParam<int> {};

TEST_P(DeviceDirectPieces, CallsLargerThanTheOwnBuffersGoDirectInPieces) {
  constexpr int n = 3, root = 2;
  constexpr size_t ownBytes = 256 << 10, count = kEqualPiecesCount;
  setenv("WEFT_OWN_DEVICE_BUFFER_BYTES", std::to_string(ownBytes).c_str(), 1);
  // 0: all exportable, 1: none, 2: the last rank not, 3: no mapping, 4: rank 0's inputs on the host
  const int placement = GetParam();
  auto plainRank = [&](int r) { return placement == 1 || (placement == 2 && r == n - 1); };
  OneProcessRanks ranks(n);
  ranks.device().setImportable(placement != 3);
  unsetenv("WEFT_OWN_DEVICE_BUFFER_BYTES");
  ASSERT_TRUE(ranks.ok);
  std::vector<std::vector<char>> hostInputs;
  bool ownBuffersMade = false;  // by an all-to-all in place
  unsigned seed = 300;
  for (Collective collective : kCutCollectives)
    for (bool inPlace : {false, true}) {
      if (placement == 4 && inPlace) continue;  // an input on the host makes the output host memory too
      ++seed;
      const std::string label = std::string(collectiveName(collective)) + (inPlace ? " in place" : "") +
                                ", placement " + std::to_string(placement);
      const uint64_t expectedPieces = piecesOf(n, everyBlock(collective));
      // Rank 0's input on the host stages every rank's pieces, but a broadcast's or scatter's, whose
      // input off the root nobody reads.
      const bool staged = placement == 3 ||
                          (placement == 4 && collective != Collective::Broadcast && collective != Collective::Scatter);
      const CallSpec spec{collective, inPlace, collective == Collective::ReduceScatter ? ncclAvg : ncclSum,
                          seed,       root,    count};
      std::vector<StreamChecks> checks = ranks.checksPerRank();
      std::vector<char*> results(n);
      std::vector<uint64_t> lastSequence(n);
      for (int r = 0; r < n; ++r) lastSequence[r] = lastSequenceOf(ranks.comms[r]);
      ASSERT_EQ(ncclGroupStart(), ncclSuccess);
      for (int r = 0; r < n; ++r) {
        ranks.cpu.allocatePlain(plainRank(r));
        results[r] =
            callCollective(sideOf(ranks, r), checks[r], spec, placement == 4 && r == 0 ? &hostInputs : nullptr);
        ASSERT_NE(results[r], nullptr) << label;
      }
      ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
      ranks.cpu.allocatePlain(false);
      for (int r = 0; r < n; ++r) expectResult(sideOf(ranks, r), checks[r], spec, results[r], label);
      for (int r = 0; r < n; ++r) {
        ranks.cpu.synchronize(ranks.streams[r]);
        EXPECT_EQ(checks[r].mismatches(), 0u) << "rank " << r << ": " << label;
        const auto [directPieces, otherCalls] = directAndOtherRuns(ranks.comms[r], lastSequence[r]);
        EXPECT_EQ(directPieces, staged ? 0 : expectedPieces) << "rank " << r << ": " << label;
        EXPECT_EQ(otherCalls, staged ? expectedPieces : 0) << "rank " << r << ": " << label;
        const auto& own = ranks.comms[r]->direct.ownDevice;
        if (staged) continue;
        // An all-to-all in place goes through the own buffers on any memory (its direct schedule
        // needs the buffers apart); they stay.
        if (plainRank(r) || ownBuffersMade || (collective == Collective::AllToAll && inPlace)) {
          EXPECT_NE(own.base, nullptr) << "rank " << r << ": " << label;
          EXPECT_LE(own.areaBytes, ownBytes) << "rank " << r << ": " << label;
        } else {
          EXPECT_EQ(own.base, nullptr) << "rank " << r << ": its own memory can be mapped: " << label;
        }
      }
      ownBuffersMade = ownBuffersMade || (!staged && collective == Collective::AllToAll && inPlace);
    }
  ncclResult_t asyncError = ncclSuccess;
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(ncclCommGetAsyncError(ranks.comms[r], &asyncError), ncclSuccess);
    EXPECT_EQ(asyncError, ncclSuccess) << "rank " << r;
  }
  if (placement == 3) {
    EXPECT_EQ(ranks.device().kernelLaunches(), 0u);
  } else if (placement < 3) {  // (4: the broadcast's direct copies are copies, not kernels)
    EXPECT_GT(ranks.device().kernelLaunches(), 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Placements, DeviceDirectPieces, ::testing::Values(0, 1, 2, 3, 4));

// The same across rank processes (each maps its peers' buffers through the fd broker, not at
// their own addresses): the last rank on memory that cannot be exported, the others on
// ncclMemAlloc's, so that strided and contiguous layouts of one piece meet.
TEST_P(DeviceDirectRanks, MixedMemoryGoesDirectInPiecesAcrossProcesses) {
  const int n = GetParam();
  constexpr size_t ownBytes = 256 << 10;
  EXPECT_EQ(describeFailures(runRankProcesses(
                n,
                [&](int rank, const ncclUniqueId& id) {
                  setenv("WEFT_OWN_DEVICE_BUFFER_BYTES", std::to_string(ownBytes).c_str(), 1);
                  CpuTestDevice device;
                  device.allocatePlain(rank == n - 1);
                  ncclComm_t comm;
                  if (ncclCommInitRank(&comm, n, id, rank) != ncclSuccess) return 1;
                  cudaStream_t stream = device.createStream();
                  int status = 0;
                  unsigned seed = 700;
                  for (Collective collective : kCutCollectives)
                    for (bool inPlace : {false, true}) {
                      const CallSpec spec{collective, inPlace, ncclSum, ++seed, 0, kCount};
                      const std::string label = std::string(collectiveName(collective)) + (inPlace ? " in place" : "");
                      const uint64_t before = lastSequenceOf(comm);
                      const RankSide side{device, comm, stream, rank, n};
                      StreamChecks check(device, rank);
                      const char* result = callCollective(side, check, spec);
                      if (!result) return 2;
                      expectResult(side, check, spec, result, label);
                      device.synchronize(stream);
                      if (check.mismatches()) status = 3;
                      const auto [direct, other] = directAndOtherRuns(comm, before);
                      if (direct != piecesOf(n, everyBlock(collective)) || other) {
                        fprintf(stderr, "rank %d: %s: %llu direct runs, %llu others\n", rank, label.c_str(),
                                (unsigned long long)direct, (unsigned long long)other);
                        status = 4;
                      }
                    }
                  device.destroyStream(stream);
                  if (ncclCommDestroy(comm) != ncclSuccess) status = 5;
                  return status;
                },
                120)),
            "");
}

// Host memory that every peer maps (weftMemAllocHost) on ranks that all have a device: the cut
// does not depend on the memory, so the same pieces, each direct on the host, a peer reaching each
// rank's strided blocks through its moved mapping. Results against the reference.
TEST(DeviceDirectPiecesOnHost, SharedHostMemoryGoesDirectInPiecesToo) {
  constexpr int n = 3;
  constexpr size_t ownBytes = 256 << 10, count = kCount, block = count * sizeof(float);
  setenv("WEFT_OWN_DEVICE_BUFFER_BYTES", std::to_string(ownBytes).c_str(), 1);
  setenv("WEFT_DIRECT_MIN_BYTES", "65536", 1);
  OneProcessRanks ranks(n);
  unsetenv("WEFT_OWN_DEVICE_BUFFER_BYTES");
  unsetenv("WEFT_DIRECT_MIN_BYTES");
  ASSERT_TRUE(ranks.ok);
  std::vector<char*> sends(n), recvs(n);
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(weftMemAllocHost(reinterpret_cast<void**>(&sends[r]), n * block), ncclSuccess);
    ASSERT_EQ(weftMemAllocHost(reinterpret_cast<void**>(&recvs[r]), n * block), ncclSuccess);
  }
  unsigned seed = 500;
  for (Collective collective : {Collective::AllGather, Collective::ReduceScatter})
    for (bool inPlace : {false, true}) {
      ++seed;
      const std::string label = std::string(collectiveName(collective)) + (inPlace ? " in place" : "");
      const ncclRedOp_t op = collective == Collective::ReduceScatter ? ncclAvg : ncclSum;
      const uint64_t expectedPieces = piecesOf(n, true);
      std::vector<uint64_t> lastSequence(n, 0);
      std::vector<const char*> results(n);
      ASSERT_EQ(ncclGroupStart(), ncclSuccess);
      for (int r = 0; r < n; ++r) {
        const auto entries = ranks.comms[r]->exec.records.entries();
        if (!entries.empty()) lastSequence[r] = entries.back()->sequence;
        if (collective == Collective::AllGather) {
          char* send = inPlace ? recvs[r] + r * block : sends[r];
          fillInput(send, count, r, ncclFloat32, op, seed);
          results[r] = recvs[r];
          ASSERT_EQ(ncclAllGather(send, recvs[r], count, ncclFloat32, ranks.comms[r], ranks.streams[r]), ncclSuccess);
        } else {
          fillInput(sends[r], n * count, r, ncclFloat32, op, seed);
          char* recv = inPlace ? sends[r] + r * block : recvs[r];
          results[r] = recv;
          ASSERT_EQ(ncclReduceScatter(sends[r], recv, count, ncclFloat32, op, ranks.comms[r], ranks.streams[r]),
                    ncclSuccess);
        }
      }
      ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
      for (int r = 0; r < n; ++r) {
        if (collective == Collective::AllGather) {
          for (int q = 0; q < n; ++q)
            EXPECT_EQ(countMismatchesAgainst(
                          results[r] + q * block, count, ncclFloat32,
                          [=](size_t i) { return inputValue(q, i, ncclFloat32, op, seed); }, 1, ncclSum, label.c_str()),
                      0u)
                << "rank " << r << ", block " << q << ": " << label;
        } else {
          EXPECT_EQ(countMismatchesAgainst(
                        results[r], count, ncclFloat32,
                        [=](size_t i) { return expectedReduction(n, r * count + i, ncclFloat32, op, seed); }, n, op,
                        label.c_str()),
                    0u)
              << "rank " << r << ": " << label;
        }
        uint64_t directPieces = 0;
        for (const CollectiveRecord* entry : ranks.comms[r]->exec.records.entries())
          if (entry->sequence > lastSequence[r] && std::string(entry->algorithm) == "direct") ++directPieces;
        EXPECT_EQ(directPieces, expectedPieces) << "rank " << r << ": " << label;
      }
    }
  EXPECT_EQ(ranks.device().kernelLaunches(), 0u) << "host memory: the host copies and reduces";
  for (int r = 0; r < n; ++r) {
    ncclMemFree(sends[r]);
    ncclMemFree(recvs[r]);
  }
}

// A group of a small all-reduce (the one-shot's size) and one cut into pieces, on one rank in host
// memory and on the others in device memory: the device ranks run each call in a batch of its
// own, the host rank all of them in one run. Only a lone call may take the one-shot exchange, so
// none does here; were the device ranks to take it, they would wait in the mailboxes while the
// host rank waits in the direct path's exchange (until WEFT_TIMEOUT).
TEST(DeviceDirectPiecesOnHost, ASmallAllReduceBesideACutOneIsNotOneShot) {
  constexpr int n = 3;
  constexpr size_t small = 100, large = kCount;
  setenv("WEFT_OWN_DEVICE_BUFFER_BYTES", std::to_string(256 << 10).c_str(), 1);
  setenv("WEFT_TIMEOUT", "20", 1);  // read when a wait outlasts it: set for the whole test
  OneProcessRanks ranks(n);
  unsetenv("WEFT_OWN_DEVICE_BUFFER_BYTES");
  ASSERT_TRUE(ranks.ok);
  std::vector<StreamChecks> checks = ranks.checksPerRank();
  std::vector<std::vector<float>> host(2);  // rank 0's, in place
  host[0].resize(small);
  host[1].resize(large);
  std::vector<std::vector<char*>> device(n);
  const unsigned seeds[] = {61, 62};
  const size_t counts[] = {small, large};
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < n; ++r)
    for (int k = 0; k < 2; ++k) {
      char* buffer = nullptr;
      if (r == 0) {
        fillInput(host[k].data(), counts[k], r, ncclFloat32, ncclSum, seeds[k]);
        buffer = reinterpret_cast<char*>(host[k].data());
      } else {
        buffer = checks[r].input(ranks.streams[r], counts[k], ncclFloat32, ncclSum, seeds[k]);
        device[r].push_back(buffer);
      }
      ASSERT_EQ(ncclAllReduce(buffer, buffer, counts[k], ncclFloat32, ncclSum, ranks.comms[r], ranks.streams[r]),
                ncclSuccess);
    }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(countMismatches(host[k].data(), counts[k], n, ncclFloat32, ncclSum, seeds[k], "host rank"), 0u);
    for (int r = 1; r < n; ++r)
      checks[r].expect(
          ranks.streams[r], device[r][k], counts[k], ncclFloat32,
          [=](size_t i) { return expectedReduction(n, i, ncclFloat32, ncclSum, seeds[k]); }, n, ncclSum, "device rank");
  }
  for (int r = 1; r < n; ++r) {
    ranks.cpu.synchronize(ranks.streams[r]);
    EXPECT_EQ(checks[r].mismatches(), 0u) << "rank " << r;
  }
  for (int r = 0; r < n; ++r) {
    ncclResult_t asyncError = ncclSuccess;
    EXPECT_EQ(ncclCommGetAsyncError(ranks.comms[r], &asyncError), ncclSuccess);
    EXPECT_EQ(asyncError, ncclSuccess) << "rank " << r << ": " << ncclGetLastError(ranks.comms[r]);
  }
  unsetenv("WEFT_TIMEOUT");
}

}  // namespace
