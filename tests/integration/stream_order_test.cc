// Collectives on device memory in stream order, run through the CPU implementation of the
// device seam (runtime/device/cpu_device.h: device memory is host memory the device allocated,
// streams are ordered queues on threads). Each test plays a CUDA program: inputs are written
// and results read in stream order around the call (tests/support/test_device.h), and "kernels"
// are functions queued on a stream.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/dtype.h"
#include "nccl.h"
#include "runtime/device/cpu_device.h"
#include "tests/support/multiprocess.h"
#include "tests/support/reference.h"
#include "tests/support/test_device.h"
#include "weft/weft.h"

using namespace weft;
using namespace weft::testing;

namespace {

using Clock = std::chrono::steady_clock;

class StreamOrderedRanks : public ::testing::TestWithParam<int> {};

TEST_P(StreamOrderedRanks, EveryCollectiveTypeAndPlacementMatchesTheReference) {
  const int n = GetParam();
  auto outcomes = runRankProcesses(
      n,
      [&](int rank, const ncclUniqueId& id) {
        CpuTestDevice device;
        return runStreamOrderedGrid(device, rank, n, id) == 0 ? 0 : 1;
      },
      300);
  EXPECT_EQ(describeFailures(outcomes), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, StreamOrderedRanks, ::testing::Values(1, 2, 3, 4));

// A communicator records the device it was created on (ncclCommInitAll: devlist[r], else rank r
// wrapping around the devices there are, since weft allows ranks to share one), and its stream
// work is enqueued with that device current, the caller's restored afterwards.
TEST(StreamOrder, CommunicatorsRecordAndUseTheirDevice) {
  CpuTestDevice cpu;
  cpu.cpu().setDeviceCount(2);
  std::vector<ncclComm_t> comms(3);
  ASSERT_EQ(ncclCommInitAll(comms.data(), 3, nullptr), ncclSuccess) << ncclGetLastError(nullptr);
  for (int r = 0; r < 3; ++r) {
    int device = -1;
    ASSERT_EQ(ncclCommCuDevice(comms[r], &device), ncclSuccess);
    EXPECT_EQ(device, r % 2) << "rank " << r;
  }
  std::vector<cudaStream_t> streams;
  std::vector<StreamChecks> checks;
  std::vector<char*> buffers;
  for (int r = 0; r < 3; ++r) {
    streams.push_back(cpu.createStream());
    checks.emplace_back(cpu, r);
    buffers.push_back(checks[r].input(streams[r], 100, ncclFloat32, ncclSum, 7));
  }
  ASSERT_EQ(cpu.cpu().setCurrentDevice(0), ncclSuccess);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < 3; ++r)
    ASSERT_EQ(ncclAllReduce(buffers[r], buffers[r], 100, ncclFloat32, ncclSum, comms[r], streams[r]), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(cpu.cpu().hostFunctionDevice(), 0);  // rank 2's, the last enqueued: device 0
  int current = -1;
  ASSERT_EQ(cpu.cpu().currentDevice(&current), ncclSuccess);
  EXPECT_EQ(current, 0) << "the caller's device was not restored";
  ASSERT_EQ(ncclAllReduce(buffers[1], buffers[1], 100, ncclFloat32, ncclSum, comms[1], streams[1]), ncclSuccess)
      << "a lone call on a 3-rank communicator completes only once the others join";
  EXPECT_EQ(cpu.cpu().hostFunctionDevice(), 1);  // rank 1's communicator is on device 1
  ASSERT_EQ(cpu.cpu().currentDevice(&current), ncclSuccess);
  EXPECT_EQ(current, 0);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r : {0, 2})
    ASSERT_EQ(ncclAllReduce(buffers[r], buffers[r], 100, ncclFloat32, ncclSum, comms[r], streams[r]), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < 3; ++r) {
    checks[r].expect(
        streams[r], buffers[r], 100, ncclFloat32,
        [](size_t i) { return 3 * expectedReduction(3, i, ncclFloat32, ncclSum, 7); }, 3, ncclSum,
        "two all-reduces, the second's input the first's result");
    cpu.synchronize(streams[r]);
    EXPECT_EQ(checks[r].mismatches(), 0u);
  }
  for (ncclComm_t c : comms) ncclCommDestroy(c);
  for (auto s : streams) cpu.destroyStream(s);

  const int onDeviceOne[] = {1, 1};
  ASSERT_EQ(ncclCommInitAll(comms.data(), 2, onDeviceOne), ncclSuccess) << ncclGetLastError(nullptr);
  for (int r = 0; r < 2; ++r) {
    int device = -1;
    ASSERT_EQ(ncclCommCuDevice(comms[r], &device), ncclSuccess);
    EXPECT_EQ(device, 1);
    ncclCommDestroy(comms[r]);
  }
  const int missing[] = {0, 2};
  EXPECT_EQ(ncclCommInitAll(comms.data(), 2, missing), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("devlist[1]=2"), std::string::npos)
      << ncclGetLastError(nullptr);

  // NCCL's one-process pattern: each rank's device made current before its ncclCommInitRank in
  // a group; the inits run at ncclGroupEnd, on other threads, and still record those devices.
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(cpu.cpu().setCurrentDevice(1 - r), ncclSuccess);
    ASSERT_EQ(ncclCommInitRank(&comms[r], 2, id, r), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  for (int r = 0; r < 2; ++r) {
    int device = -1;
    ASSERT_EQ(ncclCommCuDevice(comms[r], &device), ncclSuccess);
    EXPECT_EQ(device, 1 - r) << "rank " << r;
  }
  // A split records its parent's device, whatever is current on the thread that splits.
  ncclComm_t split[2] = {nullptr, nullptr};
  ncclResult_t splitResult[2];
  std::vector<std::thread> splitters;
  for (int r = 0; r < 2; ++r)
    splitters.emplace_back([&, r] { splitResult[r] = ncclCommSplit(comms[r], 0, r, &split[r], nullptr); });
  for (auto& t : splitters) t.join();
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(splitResult[r], ncclSuccess) << ncclGetLastError(nullptr);
    int device = -1;
    ASSERT_EQ(ncclCommCuDevice(split[r], &device), ncclSuccess);
    EXPECT_EQ(device, 1 - r) << "rank " << r << "'s split (its thread is on device 0)";
    ncclCommDestroy(split[r]);
  }
  for (int r = 0; r < 2; ++r) ncclCommDestroy(comms[r]);
  ASSERT_EQ(cpu.cpu().setCurrentDevice(0), ncclSuccess);
}

// Pinned host memory (cudaHostAlloc) is stream-ordered as in NCCL: the call returns at once,
// reads the input a stream writes after a gate, and its result is there for work queued after it.
TEST(StreamOrder, PinnedHostBuffersAreReadAndWrittenInStreamOrder) {
  OneProcessRanks ranks(2);
  ASSERT_TRUE(ranks.ok);
  constexpr size_t kCount = 4096;
  std::atomic<bool> gateOpen{false};
  std::vector<float*> buffers(ranks.n);
  std::vector<std::vector<float>> seen(ranks.n, std::vector<float>(kCount, -1));
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < ranks.n; ++r) {
    void* pinned = nullptr;
    ASSERT_EQ(ranks.device().allocatePinned(kCount * sizeof(float), &pinned), ncclSuccess);
    buffers[r] = static_cast<float*>(pinned);
    ranks.device().enqueue(ranks.streams[r], [&, r] {
      while (!gateOpen.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      for (size_t i = 0; i < kCount; ++i) buffers[r][i] = static_cast<float>(i % 97) * (r + 1);
    });
    ASSERT_EQ(ncclAllReduce(buffers[r], buffers[r], kCount, ncclFloat32, ncclSum, ranks.comms[r], ranks.streams[r]),
              ncclSuccess);
  }
  const auto before = Clock::now();
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);  // where the group's calls reach their streams
  EXPECT_LT(Clock::now() - before, std::chrono::milliseconds(500)) << "the call waited for its streams";
  for (int r = 0; r < ranks.n; ++r)
    ranks.device().enqueue(ranks.streams[r], [&, r] { std::copy(buffers[r], buffers[r] + kCount, seen[r].begin()); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  for (int r = 0; r < ranks.n; ++r) EXPECT_EQ(seen[r][1], -1) << "rank " << r << ": work after the call ran first";
  gateOpen = true;
  for (int r = 0; r < ranks.n; ++r) {
    ranks.device().synchronize(ranks.streams[r]);
    size_t wrong = 0;
    for (size_t i = 0; i < kCount; ++i) wrong += seen[r][i] != static_cast<float>(i % 97) * 3;
    EXPECT_EQ(wrong, 0u) << "rank " << r;
  }
  for (float* b : buffers) ranks.device().freePinned(b);
}

// A device call returns before its stream reaches it: one thread enqueues an all-reduce on every
// rank, one after the other and without a group (on host memory the first would wait for the
// others forever), while each stream is held shut by a gate queued before the input is written.
TEST(StreamOrder, CallsReturnBeforeTheirStreamsReachThem) {
  OneProcessRanks ranks(4);
  ASSERT_TRUE(ranks.ok);
  std::atomic<bool> gateOpen{false};
  const size_t count = 1000;
  std::vector<StreamChecks> checks;
  for (int r = 0; r < ranks.n; ++r) checks.emplace_back(ranks.cpu, r);
  for (int r = 0; r < ranks.n; ++r) {
    ranks.device().enqueue(ranks.streams[r], [&] {
      while (!gateOpen.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    char* buffer = checks[r].input(ranks.streams[r], count, ncclFloat32, ncclSum, 3);
    const auto before = Clock::now();
    ASSERT_EQ(ncclAllReduce(buffer, buffer, count, ncclFloat32, ncclSum, ranks.comms[r], ranks.streams[r]),
              ncclSuccess);
    EXPECT_LT(Clock::now() - before, std::chrono::milliseconds(500)) << "rank " << r << " waited for its stream";
    checks[r].expect(
        ranks.streams[r], buffer, count, ncclFloat32,
        [](size_t i) { return expectedReduction(4, i, ncclFloat32, ncclSum, 3); }, 4, ncclSum, "gated allreduce");
  }
  gateOpen = true;
  for (int r = 0; r < ranks.n; ++r) {
    ranks.device().synchronize(ranks.streams[r]);
    EXPECT_EQ(checks[r].mismatches(), 0u);
  }
}

// A group of several calls on two streams per rank enqueues once; both streams wait for it.
TEST(StreamOrder, GroupOfCallsOnTwoStreamsIsOneBatch) {
  OneProcessRanks ranks(2);
  ASSERT_TRUE(ranks.ok);
  std::vector<cudaStream_t> second = {ranks.device().createStream(), ranks.device().createStream()};
  std::vector<StreamChecks> checks;
  for (int r = 0; r < ranks.n; ++r) checks.emplace_back(ranks.cpu, r);
  std::vector<char*> a(ranks.n), b(ranks.n);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < ranks.n; ++r) {
    a[r] = checks[r].input(ranks.streams[r], 300, ncclInt32, ncclSum, 4);
    b[r] = checks[r].input(second[r], 5000, ncclFloat64, ncclMax, 5);
    ASSERT_EQ(ncclAllReduce(a[r], a[r], 300, ncclInt32, ncclSum, ranks.comms[r], ranks.streams[r]), ncclSuccess);
    ASSERT_EQ(ncclAllReduce(b[r], b[r], 5000, ncclFloat64, ncclMax, ranks.comms[r], second[r]), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);  // where a group's calls reach their streams
  for (int r = 0; r < ranks.n; ++r) {
    checks[r].expect(
        ranks.streams[r], a[r], 300, ncclInt32, [](size_t i) { return expectedReduction(2, i, ncclInt32, ncclSum, 4); },
        2, ncclSum, "group int32");
    checks[r].expect(
        second[r], b[r], 5000, ncclFloat64, [](size_t i) { return expectedReduction(2, i, ncclFloat64, ncclMax, 5); },
        2, ncclMax, "group float64");
  }
  for (int r = 0; r < ranks.n; ++r) {
    ranks.device().synchronize(ranks.streams[r]);
    ranks.device().synchronize(second[r]);
    EXPECT_EQ(checks[r].mismatches(), 0u);
  }
  for (auto s : second) ranks.device().destroyStream(s);
}

// A host-memory call on a communicator comes after the device calls made on it before: here it
// waits until a gate on the streams opens, and both results are right.
TEST(StreamOrder, HostCallAfterDeviceCallsWaitsForThem) {
  OneProcessRanks ranks(2);
  ASSERT_TRUE(ranks.ok);
  std::atomic<bool> gateOpen{false};
  std::vector<StreamChecks> checks;
  for (int r = 0; r < ranks.n; ++r) checks.emplace_back(ranks.cpu, r);
  for (int r = 0; r < ranks.n; ++r) {
    ranks.device().enqueue(ranks.streams[r], [&] {
      while (!gateOpen.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    char* d = checks[r].input(ranks.streams[r], 64, ncclFloat32, ncclSum, 6);
    ASSERT_EQ(ncclAllReduce(d, d, 64, ncclFloat32, ncclSum, ranks.comms[r], ranks.streams[r]), ncclSuccess);
    checks[r].expect(
        ranks.streams[r], d, 64, ncclFloat32, [](size_t i) { return expectedReduction(2, i, ncclFloat32, ncclSum, 6); },
        2, ncclSum, "device before host");
  }
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    gateOpen = true;
  });
  std::vector<std::vector<float>> host(ranks.n, std::vector<float>(64));
  for (int r = 0; r < ranks.n; ++r) fillInput(host[r].data(), 64, r, ncclFloat32, ncclSum, 7);
  const auto before = Clock::now();
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < ranks.n; ++r)
    ASSERT_EQ(ncclAllReduce(host[r].data(), host[r].data(), 64, ncclFloat32, ncclSum, ranks.comms[r], nullptr),
              ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_GE(Clock::now() - before, std::chrono::milliseconds(150)) << "the host call did not wait for the device ones";
  opener.join();
  for (int r = 0; r < ranks.n; ++r) {
    EXPECT_EQ(countMismatches(host[r].data(), 64, 2, ncclFloat32, ncclSum, 7, "host after device"), 0u);
    ranks.device().synchronize(ranks.streams[r]);
    EXPECT_EQ(checks[r].mismatches(), 0u);
  }
}

// A peer that never makes its call: the stream is released at WEFT_TIMEOUT, the error is the
// communicator's asynchronous error, and later calls are refused with it.
TEST(StreamOrder, MissingPeerReleasesTheStreamWithAnAsyncError) {
  setenv("WEFT_TIMEOUT", "2", 1);
  {
    OneProcessRanks ranks(2);
    ASSERT_TRUE(ranks.ok);
    StreamChecks checks(ranks.cpu, 0);
    char* d = checks.input(ranks.streams[0], 64, ncclFloat32, ncclSum, 8);
    const auto before = Clock::now();
    ASSERT_EQ(ncclAllReduce(d, d, 64, ncclFloat32, ncclSum, ranks.comms[0], ranks.streams[0]), ncclSuccess);
    ranks.device().synchronize(ranks.streams[0]);
    const double waited = std::chrono::duration<double>(Clock::now() - before).count();
    EXPECT_GT(waited, 1.5);
    EXPECT_LT(waited, 20.0);
    ncclResult_t asyncError = ncclSuccess;
    ASSERT_EQ(ncclCommGetAsyncError(ranks.comms[0], &asyncError), ncclSuccess);
    EXPECT_NE(asyncError, ncclSuccess);
    EXPECT_NE(ncclAllReduce(d, d, 64, ncclFloat32, ncclSum, ranks.comms[0], ranks.streams[0]), ncclSuccess);
  }
  setenv("WEFT_TIMEOUT", "60", 1);
}

// ncclCommAbort releases a stream waiting for a call whose peer never comes, long before the
// time-out.
TEST(StreamOrder, AbortReleasesTheStream) {
  OneProcessRanks ranks(2);
  ASSERT_TRUE(ranks.ok);
  StreamChecks checks(ranks.cpu, 0);
  char* d = checks.input(ranks.streams[0], 64, ncclFloat32, ncclSum, 9);
  ASSERT_EQ(ncclAllReduce(d, d, 64, ncclFloat32, ncclSum, ranks.comms[0], ranks.streams[0]), ncclSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the batch is running, waiting on rank 1
  const auto before = Clock::now();
  ASSERT_EQ(ncclCommAbort(ranks.comms[0]), ncclSuccess);
  ranks.comms[0] = nullptr;
  ranks.device().synchronize(ranks.streams[0]);
  EXPECT_LT(Clock::now() - before, std::chrono::seconds(5));
}

// Capturing a collective into a CUDA graph is refused with a clear error, before anything is
// queued on the stream.
TEST(StreamOrder, GraphCaptureIsRefused) {
  OneProcessRanks ranks(1);
  ASSERT_TRUE(ranks.ok);
  StreamChecks checks(ranks.cpu, 0);
  char* d = checks.input(ranks.streams[0], 16, ncclFloat32, ncclSum, 10);
  ranks.device().setCapturing(ranks.streams[0], true);
  EXPECT_EQ(ncclAllReduce(d, d, 16, ncclFloat32, ncclSum, ranks.comms[0], ranks.streams[0]), ncclInvalidUsage);
  EXPECT_NE(std::string(ncclGetLastError(ranks.comms[0])).find("captured into a CUDA graph"), std::string::npos)
      << ncclGetLastError(ranks.comms[0]);
  ranks.device().setCapturing(ranks.streams[0], false);
  ASSERT_EQ(ncclAllReduce(d, d, 16, ncclFloat32, ncclSum, ranks.comms[0], ranks.streams[0]), ncclSuccess);
  checks.expect(
      ranks.streams[0], d, 16, ncclFloat32, [](size_t i) { return expectedReduction(1, i, ncclFloat32, ncclSum, 10); },
      1, ncclSum, "after capture ended");
  ranks.device().synchronize(ranks.streams[0]);
  EXPECT_EQ(checks.mismatches(), 0u);
}

// A PreMulSum scalar in device memory is read in stream order: a function queued before the
// call sets it to 3, one queued after the call sets it to 5, and the result is scaled by 3.
TEST(StreamOrder, DeviceScalarIsReadInStreamOrder) {
  OneProcessRanks ranks(2);
  ASSERT_TRUE(ranks.ok);
  std::vector<StreamChecks> checks;
  for (int r = 0; r < ranks.n; ++r) checks.emplace_back(ranks.cpu, r);
  std::vector<ncclRedOp_t> ops(ranks.n);
  std::vector<char*> d(ranks.n);
  std::vector<float*> scalars(ranks.n);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < ranks.n; ++r) {
    float* scalar = scalars[r] = reinterpret_cast<float*>(checks[r].deviceBuffer(sizeof(float)));
    ASSERT_EQ(ncclRedOpCreatePreMulSum(&ops[r], scalar, ncclFloat32, ncclScalarDevice, ranks.comms[r]), ncclSuccess);
    ranks.device().enqueue(ranks.streams[r], [scalar] { *scalar = 3.0f; });
    d[r] = checks[r].input(ranks.streams[r], 100, ncclFloat32, ncclSum, 11);
    ASSERT_EQ(ncclAllReduce(d[r], d[r], 100, ncclFloat32, ops[r], ranks.comms[r], ranks.streams[r]), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < ranks.n; ++r) {
    ranks.device().enqueue(ranks.streams[r], [scalar = scalars[r]] { *scalar = 5.0f; });
    checks[r].expect(
        ranks.streams[r], d[r], 100, ncclFloat32,
        [](size_t i) { return 3.0 * expectedReduction(2, i, ncclFloat32, ncclSum, 11); }, 2, ncclSum, "premulsum");
    ranks.device().synchronize(ranks.streams[r]);
    EXPECT_EQ(checks[r].mismatches(), 0u);
    EXPECT_EQ(ncclRedOpDestroy(ops[r], ranks.comms[r]), ncclSuccess);
  }
}

// ncclMemAlloc gives device memory where there is a device (here the CPU device), as NCCL's, and
// a collective on it is stream-ordered; ncclMemFree returns it to the device. weftMemAllocHost
// still gives host memory (the direct all-reduce's), which ncclMemFree also frees.
TEST(StreamOrder, MemAllocGivesDeviceMemoryWhereThereIsADevice) {
  OneProcessRanks ranks(2);
  ASSERT_TRUE(ranks.ok);
  constexpr size_t kCount = 4096;
  const size_t allocationsBefore = ranks.device().deviceAllocationCount();
  std::vector<float*> buffers(ranks.n);
  std::vector<std::vector<float>> seen(ranks.n, std::vector<float>(kCount, -1));
  for (int r = 0; r < ranks.n; ++r) {
    void* p = nullptr;
    ASSERT_EQ(ncclMemAlloc(&p, kCount * sizeof(float)), ncclSuccess);
    EXPECT_EQ(memoryKind(p), MemoryKind::Device) << "rank " << r;
    buffers[r] = static_cast<float*>(p);
  }
  EXPECT_EQ(ranks.device().deviceAllocationCount(), allocationsBefore + ranks.n);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < ranks.n; ++r) {
    ranks.device().enqueue(ranks.streams[r], [&, r] {
      for (size_t i = 0; i < kCount; ++i) buffers[r][i] = static_cast<float>(i % 89) * (r + 1);
    });
    ASSERT_EQ(ncclAllReduce(buffers[r], buffers[r], kCount, ncclFloat32, ncclSum, ranks.comms[r], ranks.streams[r]),
              ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < ranks.n; ++r) {
    ranks.device().enqueue(ranks.streams[r], [&, r] { std::copy(buffers[r], buffers[r] + kCount, seen[r].begin()); });
    ranks.device().synchronize(ranks.streams[r]);
    size_t wrong = 0;
    for (size_t i = 0; i < kCount; ++i) wrong += seen[r][i] != static_cast<float>(i % 89) * 3;
    EXPECT_EQ(wrong, 0u) << "rank " << r;
  }
  for (float* b : buffers) EXPECT_EQ(ncclMemFree(b), ncclSuccess);
  EXPECT_EQ(ranks.device().deviceAllocationCount(), allocationsBefore);

  void* host = nullptr;
  ASSERT_EQ(weftMemAllocHost(&host, 1 << 16), ncclSuccess);
  EXPECT_EQ(memoryKind(host), MemoryKind::Host);
  EXPECT_EQ(ncclMemFree(host), ncclSuccess);
  EXPECT_EQ(ncclMemAlloc(nullptr, 64), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("ptr"), std::string::npos) << ncclGetLastError(nullptr);
  void* none = nullptr;
  EXPECT_EQ(ncclMemAlloc(&none, 0), ncclInvalidArgument);
}

}  // namespace
