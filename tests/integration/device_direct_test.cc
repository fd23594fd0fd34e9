// The direct all-reduce on device buffers (runtime/exec/direct_path.h), through the CPU
// implementation of the device seam: each rank exports its device buffers, the peers import them
// (the CPU device's memory is a shared segment, mapped through the fd broker as cuMem handles
// are), and every rank's kernels reduce its chunk straight out of the peers' buffers into every
// peer's result. Where some rank cannot go direct, every rank falls back to the selected
// algorithm, and the device ranks' progress threads stage their calls as they run. Results are
// checked against the reference; the CPU device counts kernels and imports, which tells the two
// paths apart.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "nccl.h"
#include "runtime/device/cpu_device.h"
#include "tests/support/multiprocess.h"
#include "tests/support/reference.h"
#include "tests/support/test_device.h"

using namespace weft;
using namespace weft::testing;

namespace {

// Large enough for the direct path at its default threshold (WEFT_DIRECT_MIN_BYTES, 1 MiB).
constexpr size_t kCount = (1u << 18) + 37;

// Every rank's all-reduces over the buffers `allocate` gives (device memory, or host memory for
// a rank playing a host-memory peer), in place and not, Sum and Avg; the number of wrong elements.
size_t allReduceOnce(TestDevice& device, ncclComm_t comm, int rank, int n, bool onDevice) {
  cudaStream_t stream = device.createStream();
  size_t wrong = 0;
  unsigned seed = 40;
  for (ncclRedOp_t op : {ncclSum, ncclAvg})
    for (bool inPlace : {false, true}) {
      ++seed;
      const std::string label = std::string(op == ncclSum ? "sum" : "avg") + (inPlace ? " in place" : "");
      if (onDevice) {
        StreamChecks checks(device, rank);
        char* send = checks.input(stream, kCount, ncclFloat32, op, seed);
        char* recv = inPlace ? send : checks.deviceBuffer(kCount * sizeof(float));
        if (ncclAllReduce(send, recv, kCount, ncclFloat32, op, comm, stream) != ncclSuccess) return 1000;
        checks.expect(
            stream, recv, kCount, ncclFloat32, [=](size_t i) { return expectedReduction(n, i, ncclFloat32, op, seed); },
            n, op, label);
        device.synchronize(stream);
        wrong += checks.mismatches();
      } else {
        std::vector<float> send(kCount), recv(kCount);
        fillInput(send.data(), kCount, rank, ncclFloat32, op, seed);
        float* out = inPlace ? send.data() : recv.data();
        if (ncclAllReduce(send.data(), out, kCount, ncclFloat32, op, comm, stream) != ncclSuccess) return 1000;
        wrong += countMismatches(out, kCount, n, ncclFloat32, op, seed, label.c_str());
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
};

struct RankSetup {
  bool onDevice = true;    // else the rank's buffers are host memory
  bool exportable = true;  // CpuDevice::setExportable
  bool importable = true;  // CpuDevice::setImportable
};

RankResult runRank(int rank, int n, const ncclUniqueId& id, RankSetup setup) {
  CpuTestDevice device;
  device.cpu().setExportable(setup.exportable);
  device.cpu().setImportable(setup.importable);
  RankResult result;
  ncclComm_t comm;
  if (ncclCommInitRank(&comm, n, id, rank) != ncclSuccess) return {2000, 0, 0};
  result.wrong = allReduceOnce(device, comm, rank, n, setup.onDevice);
  ncclResult_t asyncError = ncclSuccess;
  ncclCommGetAsyncError(comm, &asyncError);
  if (asyncError != ncclSuccess) {
    fprintf(stderr, "rank %d: asynchronous error: %s\n", rank, ncclGetLastError(comm));
    result.wrong += 1100;
  }
  if (ncclCommDestroy(comm) != ncclSuccess) result.wrong += 1200;
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
  const bool direct = r.kernels > 0 && r.imports > 0;
  if (expectDirect ? !direct : r.kernels != 0) {
    fprintf(stderr, "rank %d: %llu kernels, %llu imports; expected the %s path\n", rank, (unsigned long long)r.kernels,
            (unsigned long long)r.imports, expectDirect ? "direct" : "staged");
    return 2;
  }
  return 0;
}

class DeviceDirectRanks : public ::testing::TestWithParam<int> {};

// Device buffers on every rank, all exportable: the direct path, with kernels on the device.
TEST_P(DeviceDirectRanks, ReduceStraightOutOfThePeersDeviceBuffers) {
  const int n = GetParam();
  auto outcomes = runRankProcesses(
      n, [&](int rank, const ncclUniqueId& id) { return verdict(rank, runRank(rank, n, id, {}), true); }, 120);
  EXPECT_EQ(describeFailures(outcomes), "");
}

// The whole stream-ordered grid (every type, operator, size and placement) with the direct path
// taking every all-reduce it can: chunks of one element, empty chunks, integer and 8-bit types.
TEST_P(DeviceDirectRanks, EveryTypeAndPlacementOfTheGridGoesDirect) {
  const int n = GetParam();
  auto outcomes = runRankProcesses(
      n,
      [&](int rank, const ncclUniqueId& id) {
        setenv("WEFT_DIRECT_MIN_BYTES", "1", 1);
        setenv("WEFT_ONE_SHOT_MAX_BYTES", "0", 1);
        CpuTestDevice device;
        RankResult r;
        r.wrong = runStreamOrderedGrid(device, rank, n, id);
        r.kernels = device.cpu().kernelLaunches();
        r.imports = device.cpu().imports();
        return verdict(rank, r, true);
      },
      300);
  EXPECT_EQ(describeFailures(outcomes), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, DeviceDirectRanks, ::testing::Values(2, 3));

// One rank's memory cannot be exported (a sandbox that refuses CUDA IPC, memory of another
// allocator): no rank goes direct, and the device ranks stage their calls as they run.
TEST(DeviceDirect, ARankThatCannotExportMakesEveryRankStage) {
  auto outcomes = runRankProcesses(
      3,
      [&](int rank, const ncclUniqueId& id) {
        return verdict(rank, runRank(rank, 3, id, RankSetup{true, /*exportable=*/rank != 1, true}), false);
      },
      120);
  EXPECT_EQ(describeFailures(outcomes), "");
}

// One rank cannot map its peers' buffers (CUDA IPC refused by a sandbox, a device that cannot
// reach another): the ranks learn it in the second exchange, and every rank stages.
TEST(DeviceDirect, ARankThatCannotMapItsPeersMakesEveryRankStage) {
  auto outcomes = runRankProcesses(
      3,
      [&](int rank, const ncclUniqueId& id) {
        return verdict(rank, runRank(rank, 3, id, RankSetup{true, true, /*importable=*/rank != 2}), false);
      },
      120);
  EXPECT_EQ(describeFailures(outcomes), "");
}

// A rank on host memory and ranks on device memory in one all-reduce: kernels cannot read the
// host rank's buffers (nor the host its peers'), so every rank takes the selected algorithm.
TEST(DeviceDirect, HostAndDeviceRanksTogetherTakeTheStagedPath) {
  auto outcomes = runRankProcesses(
      2,
      [&](int rank, const ncclUniqueId& id) {
        return verdict(rank, runRank(rank, 2, id, RankSetup{/*onDevice=*/rank != 0, true, true}), false);
      },
      120);
  EXPECT_EQ(describeFailures(outcomes), "");
}

// Ranks of one process (ncclCommInitAll) in one group: each maps the others' buffers too, once:
// the second round on the same buffers maps nothing new.
TEST(DeviceDirect, RanksOfOneProcessInOneGroupMapEachBufferOnce) {
  CpuTestDevice cpu;
  constexpr int n = 3;
  constexpr size_t count = 2 * kCount;  // two-byte elements: as many bytes as the other tests
  std::vector<ncclComm_t> comms(n);
  ASSERT_EQ(ncclCommInitAll(comms.data(), n, nullptr), ncclSuccess);
  std::vector<cudaStream_t> streams(n);
  std::vector<StreamChecks> checks;
  for (int r = 0; r < n; ++r) {
    streams[r] = cpu.createStream();
    checks.emplace_back(cpu, r);
  }
  std::vector<char*> buffers(n);
  for (int round = 0; round < 2; ++round) {
    const unsigned seed = 7 + round;
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    for (int r = 0; r < n; ++r) {
      if (round == 0) {
        buffers[r] = checks[r].input(streams[r], count, ncclBfloat16, ncclMax, seed);
      } else {  // the same buffer, a new input, written in stream order
        std::vector<char> input(count * dataTypeSize(ncclBfloat16));
        fillInput(input.data(), count, r, ncclBfloat16, ncclMax, seed);
        cpu.write(streams[r], buffers[r], std::move(input));
      }
      ASSERT_EQ(ncclAllReduce(buffers[r], buffers[r], count, ncclBfloat16, ncclMax, comms[r], streams[r]), ncclSuccess);
    }
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
    for (int r = 0; r < n; ++r)
      checks[r].expect(
          streams[r], buffers[r], count, ncclBfloat16,
          [=](size_t i) { return expectedReduction(n, i, ncclBfloat16, ncclMax, seed); }, n, ncclMax,
          "bf16 max in place, round " + std::to_string(round));
    for (int r = 0; r < n; ++r) {
      cpu.synchronize(streams[r]);
      EXPECT_EQ(checks[r].mismatches(), 0u) << "rank " << r << ", round " << round;
    }
    EXPECT_GT(cpu.cpu().kernelLaunches(), 0u);
    // Each rank maps each peer's allocation once (in place: send and receive are one).
    EXPECT_EQ(cpu.cpu().imports(), static_cast<uint64_t>(n * (n - 1))) << "round " << round;
  }
  for (ncclComm_t c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
  for (auto s : streams) cpu.destroyStream(s);
}

}  // namespace
