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
// the default.
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

// Rank r's call of `collective` (kCount-sized blocks of floats as `count` says) on device
// buffers it allocates, its input written on its stream first, in place or not; the buffer its
// result lands in (null where the call failed).
char* callCollective(OneProcessRanks& ranks, StreamChecks& check, int r, Collective collective, bool inPlace,
                     ncclRedOp_t op, unsigned seed, int root, size_t count) {
  const int n = ranks.n;
  const size_t block = count * sizeof(float);
  cudaStream_t s = ranks.streams[r];
  ncclComm_t comm = ranks.comms[r];
  char *send = nullptr, *recv = nullptr;
  ncclResult_t result = ncclInternalError;
  switch (collective) {
    case Collective::AllGather:
    case Collective::Gather:
      recv = check.deviceBuffer(n * block);
      send = check.input(s, count, ncclFloat32, op, seed);
      if (inPlace && (collective == Collective::AllGather || r == root)) {
        ranks.cpu.copy(s, recv + r * block, send, block);
        send = recv + r * block;
      }
      result = collective == Collective::AllGather ? ncclAllGather(send, recv, count, ncclFloat32, comm, s)
                                                   : ncclGather(send, recv, count, ncclFloat32, root, comm, s);
      break;
    case Collective::ReduceScatter:
      send = check.input(s, n * count, ncclFloat32, op, seed);
      recv = inPlace ? send + r * block : check.deviceBuffer(block);
      result = ncclReduceScatter(send, recv, count, ncclFloat32, op, comm, s);
      break;
    case Collective::AllToAll:
      send = check.input(s, n * count, ncclFloat32, op, seed);
      recv = inPlace ? send : check.deviceBuffer(n * block);
      result = ncclAlltoAll(send, recv, count, ncclFloat32, comm, s);
      break;
    case Collective::Scatter:
      send = check.input(s, n * count, ncclFloat32, op, seed, root);
      recv = inPlace && r == root ? send + r * block : check.deviceBuffer(block);
      result = ncclScatter(send, recv, count, ncclFloat32, root, comm, s);
      break;
    default:  // all-reduce, broadcast, reduce
      send = check.input(s, count, ncclFloat32, op, seed);
      recv = inPlace ? send : check.deviceBuffer(block);
      result = collective == Collective::AllReduce   ? ncclAllReduce(send, recv, count, ncclFloat32, op, comm, s)
               : collective == Collective::Broadcast ? ncclBroadcast(send, recv, count, ncclFloat32, root, comm, s)
                                                     : ncclReduce(send, recv, count, ncclFloat32, op, root, comm, s);
  }
  EXPECT_EQ(result, ncclSuccess) << collectiveName(collective) << ", rank " << r;
  return result == ncclSuccess ? recv : nullptr;
}

// Queues the reads of rank r's result of callCollective against the reference.
void expectResult(OneProcessRanks& ranks, StreamChecks& check, int r, Collective collective, const char* result,
                  ncclRedOp_t op, unsigned seed, int root, size_t count, const std::string& label) {
  const int n = ranks.n;
  const size_t block = count * sizeof(float);
  cudaStream_t s = ranks.streams[r];
  auto inputOf = [&](int owner, size_t first) {
    return [=](size_t i) { return inputValue(owner, first + i, ncclFloat32, op, seed); };
  };
  switch (collective) {
    case Collective::AllGather:
    case Collective::Gather:
      if (collective == Collective::AllGather || r == root)
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
      if (collective == Collective::AllReduce || r == root)
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
        for (int r = 0; r < n; ++r) {
          results[r] = callCollective(ranks, checks[r], r, collective, inPlace, op, seed, root, kCount);
          ASSERT_NE(results[r], nullptr) << label;
        }
        ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
        for (int r = 0; r < n; ++r)
          expectResult(ranks, checks[r], r, collective, results[r], op, seed, root, kCount, label);
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

// Calls larger than the communicator's own device buffers (WEFT_OWN_DEVICE_BUFFER_BYTES, here
// 256 KiB) on one host where every rank has a device are cut into pieces that fit
// (runtime/exec/staging_slices.h); every piece goes direct. A rank on memory that cannot be
// exported copies each piece through its own buffers, a strided piece's blocks in one 2-D copy; a
// rank on ncclMemAlloc's memory goes direct on its own buffers, its peers reaching its strided
// blocks through moved mappings. Four placements: all exportable, none, one rank not (so that
// ranks with strided and with contiguous buffers meet in one call), and no rank able to map its
// peers' buffers (then every piece is staged as it runs, a strided piece's blocks copied to and
// from its staging places in one 2-D copy). Results against the reference, every element of the
// strided buffers checked; each call ran in the pieces expected, on the path expected.
class DeviceDirectPieces : public ::testing::TestWithParam<int> {};

TEST_P(DeviceDirectPieces, CallsLargerThanTheOwnBuffersGoDirectInPieces) {
  constexpr int n = 3, root = 2;
  constexpr size_t ownBytes = 256 << 10, count = kCount;
  setenv("WEFT_OWN_DEVICE_BUFFER_BYTES", std::to_string(ownBytes).c_str(), 1);
  setenv("WEFT_DIRECT_MIN_BYTES", "65536", 1);  // every piece (more than half the own buffers) goes direct
  const int placement = GetParam();             // 0: all exportable, 1: none, 2: the last rank not, 3: no mapping
  auto plainRank = [&](int r) { return placement == 1 || (placement == 2 && r == n - 1); };
  const bool staged = placement == 3;
  OneProcessRanks ranks(n);
  ranks.device().setImportable(!staged);
  unsetenv("WEFT_OWN_DEVICE_BUFFER_BYTES");
  unsetenv("WEFT_DIRECT_MIN_BYTES");
  ASSERT_TRUE(ranks.ok);
  unsigned seed = 300;
  for (Collective collective : {Collective::AllReduce, Collective::Broadcast, Collective::Reduce, Collective::AllGather,
                                Collective::ReduceScatter, Collective::AllToAll})
    for (bool inPlace : {false, true}) {
      ++seed;
      const std::string label = std::string(collectiveName(collective)) + (inPlace ? " in place" : "") +
                                ", placement " + std::to_string(placement);
      const bool everyBlock = collective == Collective::AllGather || collective == Collective::ReduceScatter ||
                              collective == Collective::AllToAll;
      const size_t mostElements = everyBlock ? ownBytes / (n * sizeof(float)) : ownBytes / sizeof(float);
      const uint64_t expectedPieces = (count + mostElements - 1) / mostElements;
      const ncclRedOp_t op = collective == Collective::ReduceScatter ? ncclAvg : ncclSum;
      std::vector<StreamChecks> checks = ranks.checksPerRank();
      std::vector<char*> results(n);
      std::vector<uint64_t> lastSequence(n, 0);
      for (int r = 0; r < n; ++r) {
        const auto entries = ranks.comms[r]->exec.records.entries();
        if (!entries.empty()) lastSequence[r] = entries.back()->sequence;
      }
      ASSERT_EQ(ncclGroupStart(), ncclSuccess);
      for (int r = 0; r < n; ++r) {
        ranks.cpu.allocatePlain(plainRank(r));
        results[r] = callCollective(ranks, checks[r], r, collective, inPlace, op, seed, root, count);
        ASSERT_NE(results[r], nullptr) << label;
      }
      ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
      ranks.cpu.allocatePlain(false);
      for (int r = 0; r < n; ++r)
        expectResult(ranks, checks[r], r, collective, results[r], op, seed, root, count, label);
      for (int r = 0; r < n; ++r) {
        ranks.cpu.synchronize(ranks.streams[r]);
        EXPECT_EQ(checks[r].mismatches(), 0u) << "rank " << r << ": " << label;
        uint64_t directPieces = 0, otherCalls = 0;
        for (const CollectiveRecord* entry : ranks.comms[r]->exec.records.entries())
          if (entry->sequence > lastSequence[r] && std::string(entry->algorithm) != "direct descriptor exchange")
            ++(std::string(entry->algorithm) == "direct" ? directPieces : otherCalls);
        EXPECT_EQ(directPieces, staged ? 0 : expectedPieces) << "rank " << r << ": " << label;
        EXPECT_EQ(otherCalls, staged ? expectedPieces : 0) << "rank " << r << ": " << label;
        const auto& own = ranks.comms[r]->direct.ownDevice;
        if (staged) continue;
        // An all-to-all in place goes through the own buffers on any memory (its direct schedule
        // needs the buffers apart); it comes last.
        if (plainRank(r) || (collective == Collective::AllToAll && inPlace)) {
          EXPECT_NE(own.base, nullptr) << "rank " << r << ": " << label;
          EXPECT_LE(own.areaBytes, ownBytes) << "rank " << r << ": " << label;
        } else {
          EXPECT_EQ(own.base, nullptr) << "rank " << r << ": its own memory can be mapped: " << label;
        }
      }
    }
  if (staged)
    EXPECT_EQ(ranks.device().kernelLaunches(), 0u);
  else
    EXPECT_GT(ranks.device().kernelLaunches(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Placements, DeviceDirectPieces, ::testing::Values(0, 1, 2, 3));

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
      const uint64_t expectedPieces = (count + ownBytes / (n * sizeof(float)) - 1) / (ownBytes / (n * sizeof(float)));
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
