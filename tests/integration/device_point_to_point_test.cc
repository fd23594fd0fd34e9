// Sends and receives on device buffers between ranks of one host (runtime/exec/direct_point_to_point.h),
// through the CPU implementation of the device seam: the sender maps the receiver's exported
// buffer and copies into it, then sends a token. A group mixes transfers that go direct with
// ones that cannot (below WEFT_DIRECT_MIN_BYTES, to oneself, host memory, a buffer that cannot
// be exported or mapped, a buffer sent from and received into in the same group); each pair
// agrees, and every result is checked against the reference. The CPU device counts the peers'
// buffers it mapped, and each rank's record names the path its data took.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

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

// At and above the direct path's default threshold (WEFT_DIRECT_MIN_BYTES, 1 MiB) in floats.
constexpr size_t kLarge = (1u << 18) + 37;

// The transfers of one uneven all-to-all, as PyTorch's all_to_all with uneven splits makes
// them: from every rank to every rank (itself included) a large block and a small one, each of
// its own size and values.
size_t largeCount(int from, int to) { return kLarge + 1000 * static_cast<size_t>(from + 2 * to); }
size_t smallCount(int from, int to) { return 100 + static_cast<size_t>(7 * from + to); }
unsigned seedOf(int from, int to, bool large, unsigned round) {
  return 500 + round * 100 + static_cast<unsigned>(from * 10 + to) * 2 + (large ? 1 : 0);
}

// One rank's part: its buffers on the device (or in pinned host memory, which the progress
// thread reads and writes in place), the group's calls (odd ranks receive first: calls match by
// order per peer, not by kind), then the results checked in stream order. The number of wrong
// elements (1000+ when a call failed). `withAllReduce`: the group starts with a direct all-reduce
// (device buffers), whose result may still be in the communicator's own device buffers when the
// receives want them.
size_t unevenAllToAll(CpuTestDevice& device, ncclComm_t comm, cudaStream_t stream, int rank, int n, bool onDevice,
                      unsigned round, bool withAllReduce = false) {
  StreamChecks checks(device, rank);
  std::vector<void*> pinned;
  auto pinnedFloats = [&](size_t count) {
    void* buffer = nullptr;
    if (device.cpu().allocatePinned(count * sizeof(float), &buffer) != ncclSuccess) std::abort();
    pinned.push_back(buffer);
    return static_cast<float*>(buffer);
  };
  struct Transfer {
    int peer;
    bool large;
    size_t count;
    char* send;
    char* recv;
  };
  std::vector<Transfer> transfers;
  for (int peer = 0; peer < n; ++peer)
    for (bool large : {true, false}) {
      Transfer t{peer, large, 0, nullptr, nullptr};
      const size_t sendCount = large ? largeCount(rank, peer) : smallCount(rank, peer);
      t.count = large ? largeCount(peer, rank) : smallCount(peer, rank);
      const unsigned seed = seedOf(rank, peer, large, round);
      if (onDevice) {
        t.send = checks.input(stream, sendCount, ncclFloat32, ncclSum, seed);
        t.recv = checks.deviceBuffer(t.count * sizeof(float));
      } else {
        float* send = pinnedFloats(sendCount);
        fillInput(send, sendCount, rank, ncclFloat32, ncclSum, seed);
        t.send = reinterpret_cast<char*>(send);
        t.recv = reinterpret_cast<char*>(pinnedFloats(t.count));
      }
      transfers.push_back(t);
    }
  auto sendAll = [&] {
    for (const Transfer& t : transfers) {
      const size_t count = t.large ? largeCount(rank, t.peer) : smallCount(rank, t.peer);
      if (ncclSend(t.send, count, ncclFloat32, t.peer, comm, stream) != ncclSuccess) return false;
    }
    return true;
  };
  auto recvAll = [&] {
    for (const Transfer& t : transfers)
      if (ncclRecv(t.recv, t.count, ncclFloat32, t.peer, comm, stream) != ncclSuccess) return false;
    return true;
  };
  if (ncclGroupStart() != ncclSuccess) return 1000;
  const unsigned reduceSeed = 900 + round;
  char* reduced = nullptr;
  if (withAllReduce) {
    reduced = checks.input(stream, kLarge, ncclFloat32, ncclSum, reduceSeed);
    if (ncclAllReduce(reduced, reduced, kLarge, ncclFloat32, ncclSum, comm, stream) != ncclSuccess) return 1000;
  }
  const bool called = rank % 2 ? recvAll() && sendAll() : sendAll() && recvAll();
  if (ncclGroupEnd() != ncclSuccess || !called) return 1000;
  size_t wrong = 0;
  if (reduced)
    checks.expect(
        stream, reduced, kLarge, ncclFloat32,
        [=](size_t i) { return expectedReduction(n, i, ncclFloat32, ncclSum, reduceSeed); }, n, ncclSum,
        "the all-reduce before");
  if (onDevice)
    for (const Transfer& t : transfers) {
      const unsigned seed = seedOf(t.peer, rank, t.large, round);
      const int from = t.peer;
      checks.expect(
          stream, t.recv, t.count, ncclFloat32,
          [=](size_t i) { return inputValue(from, i, ncclFloat32, ncclSum, seed); }, 1, ncclSum,
          "from rank " + std::to_string(from) + (t.large ? ", large" : ", small"));
    }
  device.synchronize(stream);
  if (!onDevice)  // written in place, in stream order
    for (const Transfer& t : transfers) {
      const unsigned seed = seedOf(t.peer, rank, t.large, round);
      const int from = t.peer;
      const std::string label = "from rank " + std::to_string(from) + (t.large ? ", large" : ", small");
      wrong += countMismatchesAgainst(
          t.recv, t.count, ncclFloat32, [=](size_t i) { return inputValue(from, i, ncclFloat32, ncclSum, seed); }, 1,
          ncclSum, label.c_str());
    }
  for (void* buffer : pinned) device.cpu().freePinned(buffer);
  return wrong + checks.mismatches();
}

// The algorithm of the rank's last record (its group's data run), and the bytes it counts.
std::string lastAlgorithm(ncclComm_t comm) {
  const std::vector<const CollectiveRecord*> entries = comm->exec.records.entries();
  return entries.empty() ? "" : entries.back()->algorithm;
}
uint64_t lastRecordBytes(ncclComm_t comm) {
  const std::vector<const CollectiveRecord*> entries = comm->exec.records.entries();
  return entries.empty() ? 0 : entries.back()->bytes;
}

// Ranks of one process, in one group: the large transfers between ranks go direct, the rest
// alike in the same run. Into cudaMalloc-like buffers (which cannot be exported) the senders
// write the receiver's own device buffers, copied out after the run; the all-reduce before
// them in the group leaves its result there too, which must be copied out first.
TEST(DeviceDirectSendRecv, AnUnevenAllToAllGoesDirectOnEitherKindOfDeviceMemory) {
  constexpr int n = 3;
  for (bool plain : {false, true}) {
    OneProcessRanks ranks(n, plain);
    ASSERT_TRUE(ranks.ok);
    const uint64_t importsBefore = ranks.device().imports();
    // The ranks' calls of one group each: one thread per rank, as each process would.
    std::vector<size_t> wrong(n);
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r)
      threads.emplace_back([&, r] {
        wrong[r] = unevenAllToAll(ranks.cpu, ranks.comms[r], ranks.streams[r], r, n, true, plain ? 1 : 0, true);
      });
    for (auto& t : threads) t.join();
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(wrong[r], 0u) << "rank " << r << (plain ? ", cudaMalloc-like buffers" : "");
      EXPECT_EQ(lastAlgorithm(ranks.comms[r]), "point to point, direct") << "rank " << r;
      EXPECT_EQ(ranks.comms[r]->direct.ownDevice.base != nullptr, plain) << "rank " << r;
      // The record counts what the rank sent to its peers, the direct copies included (and the
      // 8-byte tokens that announced them).
      uint64_t sent = 0;
      for (int q = 0; q < n; ++q)
        if (q != r) sent += (largeCount(r, q) + smallCount(r, q)) * sizeof(float) + sizeof(uint64_t);
      EXPECT_EQ(lastRecordBytes(ranks.comms[r]), sent) << "rank " << r;
    }
    // Each sender maps each receiver's large buffers (one allocation each here), or its own
    // buffers (one allocation).
    EXPECT_GE(ranks.device().imports(), importsBefore + n * (n - 1));
  }
}

// With WEFT_DIRECT_SEND_RECV=0 every transfer is staged, as before.
TEST(DeviceDirectSendRecv, TurnedOffEveryTransferIsStaged) {
  constexpr int n = 2;
  setenv("WEFT_DIRECT_SEND_RECV", "0", 1);
  OneProcessRanks ranks(n);
  ASSERT_TRUE(ranks.ok);
  const uint64_t importsBefore = ranks.device().imports();
  std::vector<size_t> wrong(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back(
        [&, r] { wrong[r] = unevenAllToAll(ranks.cpu, ranks.comms[r], ranks.streams[r], r, n, true, 0); });
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(wrong[r], 0u) << "rank " << r;
    EXPECT_EQ(lastAlgorithm(ranks.comms[r]), "point to point") << "rank " << r;
  }
  EXPECT_EQ(ranks.device().imports(), importsBefore);
}

// How a rank process is set up, and what it must find.
struct SendRecvRank {
  bool onDevice = true;       // else pinned host memory
  bool importable = true;     // CpuDevice::setImportable: it cannot map its peers' buffers
  bool expectImports = true;  // it mapped some peer's buffer (a direct send)
  bool expectDirect = true;   // some transfer of its group went direct (its record says so)
};

std::string runSendRecvRanks(int n, const std::function<SendRecvRank(int rank)>& setupFor) {
  return describeFailures(runRankProcesses(
      n,
      [&](int rank, const ncclUniqueId& id) {
        const SendRecvRank setup = setupFor(rank);
        CpuTestDevice device;
        device.cpu().setImportable(setup.importable);
        ncclComm_t comm;
        if (ncclCommInitRank(&comm, n, id, rank) != ncclSuccess) return 5;
        cudaStream_t stream = device.createStream();
        size_t wrong = 0;
        for (unsigned round = 0; round < 2; ++round)  // the second maps nothing new
          wrong += unevenAllToAll(device, comm, stream, rank, n, setup.onDevice, round);
        const std::string algorithm = lastAlgorithm(comm);
        ncclResult_t asyncError = ncclSuccess;
        ncclCommGetAsyncError(comm, &asyncError);
        if (asyncError != ncclSuccess) fprintf(stderr, "rank %d: %s\n", rank, ncclGetLastError(comm));
        device.destroyStream(stream);
        if (ncclCommDestroy(comm) != ncclSuccess || asyncError != ncclSuccess) return 6;
        if (wrong) {
          fprintf(stderr, "rank %d: %zu wrong\n", rank, wrong);
          return 1;
        }
        const uint64_t imports = device.cpu().imports();
        if ((imports > 0) != setup.expectImports) {
          fprintf(stderr, "rank %d: %llu imports\n", rank, (unsigned long long)imports);
          return 2;
        }
        if ((algorithm == "point to point, direct") != setup.expectDirect) {
          fprintf(stderr, "rank %d: its data ran as '%s'\n", rank, algorithm.c_str());
          return 3;
        }
        return 0;
      },
      120));
}

// Three ranks, rank `odd` set up as `setup`, the others as usual.
std::string oneRankDiffers(int odd, SendRecvRank setup) {
  return runSendRecvRanks(3, [=](int rank) { return rank == odd ? setup : SendRecvRank{}; });
}

// Rank 2's buffers are pinned host memory (stream-ordered, as NCCL allows): its transfers take
// the transport, ranks 0 and 1 still send to each other directly in the same group.
TEST(DeviceDirectSendRecv, APinnedMemoryRankLeavesTheOtherPairsDirect) {
  EXPECT_EQ(oneRankDiffers(2, {.onDevice = false, .expectImports = false, .expectDirect = false}), "");
}

// Rank 1 cannot map its peers' buffers: its sends are staged, and its peers learn so from the
// verdicts; the transfers into rank 1 still go direct.
TEST(DeviceDirectSendRecv, ARankThatCannotMapSendsStagedAndStillReceivesDirect) {
  EXPECT_EQ(oneRankDiffers(1, {.importable = false, .expectImports = false}), "");
}

// A rank that sends a buffer and receives into it in the same group (an exchange in place)
// keeps the ordered schedule for those two calls: written directly, the buffer could be
// overwritten before it was sent.
TEST(DeviceDirectSendRecv, AnExchangeInPlaceIsNotWrittenBeforeItIsSent) {
  constexpr int n = 2;
  OneProcessRanks ranks(n);
  ASSERT_TRUE(ranks.ok);
  std::vector<StreamChecks> checks = ranks.checksPerRank();
  std::vector<char*> buffers(n);
  const unsigned seed = 77;
  for (int r = 0; r < n; ++r) buffers[r] = checks[r].input(ranks.streams[r], kLarge, ncclFloat32, ncclSum, seed);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(ncclSend(buffers[r], kLarge, ncclFloat32, 1 - r, ranks.comms[r], ranks.streams[r]), ncclSuccess);
    ASSERT_EQ(ncclRecv(buffers[r], kLarge, ncclFloat32, 1 - r, ranks.comms[r], ranks.streams[r]), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < n; ++r) {
    const int from = 1 - r;
    checks[r].expect(
        ranks.streams[r], buffers[r], kLarge, ncclFloat32,
        [=](size_t i) { return inputValue(from, i, ncclFloat32, ncclSum, seed); }, 1, ncclSum, "in place");
  }
  for (int r = 0; r < n; ++r) {
    ranks.cpu.synchronize(ranks.streams[r]);
    EXPECT_EQ(checks[r].mismatches(), 0u) << "rank " << r;
    EXPECT_EQ(lastAlgorithm(ranks.comms[r]), "point to point") << "rank " << r;
  }
}

// A receive larger than the send it matches: an error on both ranks before anything is
// written, never a copy past the receiver's buffer or a result left half stale.
TEST(DeviceDirectSendRecv, SizesThatDisagreeAreAnErrorOnBothRanks) {
  EXPECT_EQ(describeFailures(runRankProcesses(
                2,
                [](int rank, const ncclUniqueId& id) {
                  CpuTestDevice device;
                  ncclComm_t comm;
                  if (ncclCommInitRank(&comm, 2, id, rank) != ncclSuccess) return 5;
                  cudaStream_t stream = device.createStream();
                  ncclResult_t asyncError = ncclSuccess;
                  std::string message;
                  {
                    StreamChecks checks(device, rank);
                    char* buffer = checks.input(stream, kLarge + 1000, ncclFloat32, ncclSum, 70);
                    const ncclResult_t r = rank == 0 ? ncclSend(buffer, kLarge, ncclFloat32, 1, comm, stream)
                                                     : ncclRecv(buffer, kLarge + 1000, ncclFloat32, 0, comm, stream);
                    if (r != ncclSuccess) return 4;
                    // The receiver's buffer is as it was: nothing was written into it.
                    checks.expect(
                        stream, buffer, kLarge + 1000, ncclFloat32,
                        [=](size_t i) { return inputValue(rank, i, ncclFloat32, ncclSum, 70); }, 1, ncclSum,
                        "untouched");
                    device.synchronize(stream);
                    ncclCommGetAsyncError(comm, &asyncError);
                    message = ncclGetLastError(comm);
                    if (checks.mismatches()) return 1;
                  }
                  device.destroyStream(stream);
                  ncclCommAbort(comm);
                  if (asyncError == ncclSuccess) return 2;
                  if (message.find("bytes") == std::string::npos) {
                    fprintf(stderr, "rank %d: the error does not say why: %s\n", rank, message.c_str());
                    return 3;
                  }
                  return 0;
                },
                60)),
            "");
}

// Rank 0 sends and receives kLarge floats to and from rank 1 in one group; rank 1 does the same,
// grouped or one call at a time; each on device memory or malloc'd host memory (`onMalloc[r]`).
// Each rank's exit status: 0 when it got an error (within WEFT_TIMEOUT) as `expectError` says,
// or else received the right values; else what happened.
std::string pairOfRanks(std::array<bool, 2> onMallocOf, bool rankOneCallByCall, bool expectError) {
  return describeFailures(runRankProcesses(
      2,
      [=](int rank, const ncclUniqueId& id) {
        setenv("WEFT_TIMEOUT", "5", 1);
        CpuTestDevice device;
        ncclComm_t comm;
        if (ncclCommInitRank(&comm, 2, id, rank) != ncclSuccess) return 5;
        cudaStream_t stream = device.createStream();
        const int peer = 1 - rank;
        const bool onMalloc = onMallocOf[rank];
        std::vector<float> hostSend(kLarge), hostRecv(kLarge);
        fillInput(hostSend.data(), kLarge, rank, ncclFloat32, ncclSum, 60 + rank);
        ncclResult_t r = ncclSuccess;
        ncclResult_t asyncError = ncclSuccess;
        size_t wrong = 0;
        {
          StreamChecks checks(device, rank);
          char* send = onMalloc ? reinterpret_cast<char*>(hostSend.data())
                                : checks.input(stream, kLarge, ncclFloat32, ncclSum, 60 + rank);
          char* recv =
              onMalloc ? reinterpret_cast<char*>(hostRecv.data()) : checks.deviceBuffer(kLarge * sizeof(float));
          const bool grouped = !(rank == 1 && rankOneCallByCall);
          if (grouped) r = ncclGroupStart();
          if (r == ncclSuccess) r = ncclSend(send, kLarge, ncclFloat32, peer, comm, stream);
          if (r == ncclSuccess) r = ncclRecv(recv, kLarge, ncclFloat32, peer, comm, stream);
          if (grouped && r == ncclSuccess) r = ncclGroupEnd();
          auto expected = [=](size_t i) { return inputValue(peer, i, ncclFloat32, ncclSum, 60 + peer); };
          if (!onMalloc) checks.expect(stream, recv, kLarge, ncclFloat32, expected, 1, ncclSum, "from the peer");
          device.synchronize(stream);
          ncclCommGetAsyncError(comm, &asyncError);
          wrong = onMalloc ? countMismatchesAgainst(recv, kLarge, ncclFloat32, expected, 1, ncclSum, "from the peer")
                           : checks.mismatches();
        }
        const bool failed = r != ncclSuccess || asyncError != ncclSuccess;
        fprintf(stderr, "rank %d: %s\n", rank, failed ? ncclGetLastError(comm) : "no error");
        device.destroyStream(stream);
        ncclCommAbort(comm);
        if (failed != expectError) return 1;
        return !failed && wrong ? 2 : 0;
      },
      60));
}

// One rank groups what its peer calls one by one (undefined in NCCL, NVIDIA/nccl#1279): the
// records' sizes disagree, and both ranks get an error, never a hang or a result taken for right.
TEST(DeviceDirectSendRecv, GroupedAgainstOneByOneIsAnErrorOnBothRanks) {
  EXPECT_EQ(pairOfRanks({false, false}, true, true), "");
}

// On malloc'd host memory (weft's CPU jobs) nothing changes: the plain schedule takes the same
// calls, grouped differently, and delivers them.
TEST(DeviceDirectSendRecv, MallocdMemoryKeepsThePlainScheduleWhateverTheGrouping) {
  EXPECT_EQ(pairOfRanks({true, true}, true, false), "");
}

// Malloc'd host memory against device memory (invalid in NCCL, which needs memory a device
// reaches): one side keeps the plain schedule, the other sends records; both get an error.
TEST(DeviceDirectSendRecv, MallocdMemoryAgainstDeviceMemoryIsAnErrorOnBothRanks) {
  EXPECT_EQ(pairOfRanks({false, true}, false, true), "");
}

}  // namespace
