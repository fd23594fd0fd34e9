// Every collective across rank processes: types x ops x placement x counts, checked against
// references computed independently from the deterministic inputs (tests/support/reference.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "common/dtype.h"
#include "common/numeric.h"
#include "nccl.h"
#include "tests/support/multiprocess.h"
#include "tests/support/policy_test_name.h"
#include "tests/support/reference.h"

using namespace weft;
using namespace weft::testing;

namespace {

struct Checker {
  int rank;
  const char* what;
  size_t failures = 0;

  // Compares `count` elements against expected(i) (countMismatchesAgainst); prints the first mismatches.
  void expect(const void* actual, size_t count, ncclDataType_t type, const std::function<double(size_t)>& expected,
              int nranks, ncclRedOp_t op, size_t scenario) {
    const std::string label = "rank " + std::to_string(rank) + " " + what + " #" + std::to_string(scenario);
    failures += countMismatchesAgainst(actual, count, type, expected, nranks, op, label.c_str());
  }
};

std::vector<char> inputOf(int rank, size_t count, ncclDataType_t type, ncclRedOp_t op, unsigned seed) {
  std::vector<char> buffer(count * dataTypeSize(type) + 8);
  fillInput(buffer.data(), count, rank, type, op, seed);
  return buffer;
}

// One rank's run of every collective for the given counts; returns the number of wrong elements
// (or a code > 1000 when a call failed).
size_t collectiveGrid(int rank, int n, const ncclUniqueId& id, const std::vector<size_t>& counts, bool allOps) {
  ncclComm_t comm;
  if (ncclCommInitRank(&comm, n, id, rank) != ncclSuccess) return 1001;
  unsigned seed = 100;
  size_t scenario = 0;
  auto call = [&](ncclResult_t r, const char* name) {
    if (r != ncclSuccess) {
      fprintf(stderr, "rank %d: %s failed: %s\n", rank, name, ncclGetLastError(comm));
      return false;
    }
    return true;
  };
  size_t wrong = 0;
  for (ncclDataType_t type : kAllTypes)
    for (size_t count : counts)
      for (bool inPlace : {false, true}) {
        const size_t es = dataTypeSize(type);
        const int root = static_cast<int>(++scenario % n);
        ++seed;
        // Broadcast
        {
          Checker c{rank, "broadcast"};
          std::vector<char> buf = inputOf(rank, count, type, ncclSum, seed), out(count * es + 8);
          void* dst = inPlace ? buf.data() : out.data();
          if (!call(ncclBroadcast(buf.data(), dst, count, type, root, comm, nullptr), "ncclBroadcast")) return 1002;
          c.expect(
              dst, count, type, [&](size_t i) { return inputValue(root, i, type, ncclSum, seed); }, 1, ncclSum,
              scenario);
          wrong += c.failures;
        }
        // Reduce, every op
        for (ncclRedOp_t op : kAllOps) {
          if (!allOps && op != ncclSum && op != ncclAvg) continue;
          Checker c{rank, "reduce"};
          std::vector<char> buf = inputOf(rank, count, type, op, seed), out(count * es + 8);
          void* dst = inPlace ? buf.data() : out.data();
          if (!call(ncclReduce(buf.data(), dst, count, type, op, root, comm, nullptr), "ncclReduce")) return 1003;
          if (rank == root)
            c.expect(
                dst, count, type, [&](size_t i) { return expectedReduction(n, i, type, op, seed); }, n, op, scenario);
          wrong += c.failures;
        }
        // AllGather: block r of recv is rank r's input.
        {
          Checker c{rank, "allgather"};
          std::vector<char> recv(n * count * es + 8);
          std::vector<char> mine = inputOf(rank, count, type, ncclSum, seed);
          const void* send = mine.data();
          if (inPlace) {
            memcpy(recv.data() + rank * count * es, mine.data(), count * es);
            send = recv.data() + rank * count * es;
          }
          if (!call(ncclAllGather(send, recv.data(), count, type, comm, nullptr), "ncclAllGather")) return 1004;
          for (int r = 0; r < n; ++r)
            c.expect(
                recv.data() + r * count * es, count, type,
                [&](size_t i) { return inputValue(r, i, type, ncclSum, seed); }, 1, ncclSum, scenario);
          wrong += c.failures;
        }
        // ReduceScatter, every op: rank r gets block r of the reduction of everyone's n*count inputs.
        for (ncclRedOp_t op : kAllOps) {
          if (!allOps && op != ncclSum && op != ncclMax) continue;
          Checker c{rank, "reducescatter"};
          std::vector<char> send = inputOf(rank, n * count, type, op, seed), out(count * es + 8);
          void* recv = inPlace ? send.data() + rank * count * es : out.data();
          if (!call(ncclReduceScatter(send.data(), recv, count, type, op, comm, nullptr), "ncclReduceScatter"))
            return 1005;
          c.expect(
              recv, count, type, [&](size_t i) { return expectedReduction(n, rank * count + i, type, op, seed); }, n,
              op, scenario);
          wrong += c.failures;
        }
        // AlltoAll: block j of my recv is block `rank` of rank j's send.
        {
          Checker c{rank, "alltoall"};
          std::vector<char> send = inputOf(rank, n * count, type, ncclSum, seed), out(n * count * es + 8);
          void* recv = inPlace ? send.data() : out.data();
          if (!call(ncclAlltoAll(send.data(), recv, count, type, comm, nullptr), "ncclAlltoAll")) return 1006;
          for (int j = 0; j < n; ++j)
            c.expect(
                static_cast<char*>(recv) + j * count * es, count, type,
                [&](size_t i) { return inputValue(j, rank * count + i, type, ncclSum, seed); }, 1, ncclSum, scenario);
          wrong += c.failures;
        }
        // Gather to root.
        {
          Checker c{rank, "gather"};
          std::vector<char> recv(n * count * es + 8);
          std::vector<char> mine = inputOf(rank, count, type, ncclSum, seed);
          const void* send = mine.data();
          if (inPlace && rank == root) {
            memcpy(recv.data() + root * count * es, mine.data(), count * es);
            send = recv.data() + root * count * es;
          }
          if (!call(ncclGather(send, recv.data(), count, type, root, comm, nullptr), "ncclGather")) return 1007;
          if (rank == root)
            for (int r = 0; r < n; ++r)
              c.expect(
                  recv.data() + r * count * es, count, type,
                  [&](size_t i) { return inputValue(r, i, type, ncclSum, seed); }, 1, ncclSum, scenario);
          wrong += c.failures;
        }
        // Scatter from root: my block of root's n*count input.
        {
          Checker c{rank, "scatter"};
          std::vector<char> send = inputOf(rank, n * count, type, ncclSum, seed), out(count * es + 8);
          void* recv = inPlace && rank == root ? send.data() + root * count * es : out.data();
          if (!call(ncclScatter(send.data(), recv, count, type, root, comm, nullptr), "ncclScatter")) return 1008;
          c.expect(
              recv, count, type, [&](size_t i) { return inputValue(root, rank * count + i, type, ncclSum, seed); }, 1,
              ncclSum, scenario);
          wrong += c.failures;
        }
      }
  ncclCommDestroy(comm);
  return wrong;
}

class CollectiveRanks : public ::testing::TestWithParam<int> {};

TEST_P(CollectiveRanks, EveryCollectiveTypeOpAndPlacement) {
  int n = GetParam();
  std::vector<size_t> counts = {0, 1, 7};
  if (n <= 3) counts.push_back((1 << 20) / 8 + 3);  // large sizes where the cores are not oversubscribed
  auto outcomes = runRankProcesses(
      n, [&](int rank, const ncclUniqueId& id) { return collectiveGrid(rank, n, id, counts, n <= 5) == 0 ? 0 : 1; },
      300);
  EXPECT_EQ(describeFailures(outcomes), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, CollectiveRanks, ::testing::Values(1, 2, 3, 4, 5, 8));

// Each algorithm of each collective forced through WEFT_ALGO's per-collective sections, across
// rank processes, against the reference. 4 and 8 ranks run as two fake hosts, so that the
// hierarchical schedules have rails to use.
class ForcedCollectiveAlgorithms : public ::testing::TestWithParam<std::tuple<const char*, int>> {};

TEST_P(ForcedCollectiveAlgorithms, MatchReference) {
  const char* policy = std::get<0>(GetParam());
  const int n = std::get<1>(GetParam());
  // "channels": the rings of all-reduce, all-gather and reduce-scatter on three channels, with
  // counts large enough that every channel has work (at least 64 KiB a channel).
  const bool channels = !strcmp(policy, "channels");
  auto outcomes = runRankProcesses(
      n,
      [&](int rank, const ncclUniqueId& id) {
        if (channels) {
          setenv("WEFT_ALGO", "allreduce:ring;allgather:ring;reducescatter:ring", 1);
          setenv("NCCL_MIN_NCHANNELS", "3", 1);
        } else {
          setenv("WEFT_ALGO", policy, 1);
        }
        if (n >= 4) setenv("WEFT_HOSTNAME", rank < n / 2 ? "nodeA" : "nodeB", 1);
        const std::vector<size_t> counts =
            channels ? std::vector<size_t>{7, 100003} : std::vector<size_t>{0, 1, 7, 1003};
        return collectiveGrid(rank, n, id, counts, false) == 0 ? 0 : 1;
      },
      300);
  EXPECT_EQ(describeFailures(outcomes), "");
}

INSTANTIATE_TEST_SUITE_P(
    Algorithms, ForcedCollectiveAlgorithms,
    ::testing::Combine(
        ::testing::Values("allgather:ring;reducescatter:ring;broadcast:ring;reduce:ring;alltoall:pairwise",
                          "allgather:rhd;reducescatter:rhd;broadcast:binomial;reduce:binomial;alltoall:bruck",
                          "allgather:bruck;reducescatter:hier", "allgather:hier;reducescatter:hier", "channels"),
        ::testing::Values(2, 3, 4, 8)),
    policyAndRanksName);

// Every collective over TCP striped over four sockets per pair (NCCL_NSOCKS_PERTHREAD x
// NCCL_SOCKET_NTHREADS), 3 ranks, up to 1 MiB: parts put back together on every path the
// executor takes (slot messages, in-place slices, both placements).
TEST(CollectivesOverStripedTcp, EveryCollectiveAtThreeRanks) {
  const std::vector<size_t> counts = {0, 1, 7, (1 << 20) / 8 + 3};
  auto outcomes = runRankProcesses(
      3,
      [&](int rank, const ncclUniqueId& id) {
        setenv("WEFT_TRANSPORT", "tcp", 1);
        setenv("NCCL_NSOCKS_PERTHREAD", "2", 1);
        setenv("NCCL_SOCKET_NTHREADS", "2", 1);
        return collectiveGrid(rank, 3, id, counts, false) == 0 ? 0 : 1;
      },
      300);
  EXPECT_EQ(describeFailures(outcomes), "");
}

// One million + 3 elements (large, and uneven between 2 ranks), every collective at 2 ranks, float.
TEST(CollectivesLarge, MillionPlusThreeAtTwoRanks) {
  auto outcomes = runRankProcesses(2, [&](int rank, const ncclUniqueId& id) {
    ncclComm_t comm;
    if (ncclCommInitRank(&comm, 2, id, rank) != ncclSuccess) return 1;
    const size_t count = (1 << 20) + 3;
    std::vector<float> send(2 * count), recv(2 * count);
    fillInput(send.data(), 2 * count, rank, ncclFloat32, ncclSum, 9);
    Checker c{rank, "large"};
    if (ncclReduceScatter(send.data(), recv.data(), count, ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess)
      return 2;
    c.expect(
        recv.data(), count, ncclFloat32,
        [&](size_t i) { return expectedReduction(2, rank * count + i, ncclFloat32, ncclSum, 9); }, 2, ncclSum, 0);
    if (ncclAllGather(send.data(), recv.data(), count, ncclFloat32, comm, nullptr) != ncclSuccess) return 3;
    for (int r = 0; r < 2; ++r)
      c.expect(
          recv.data() + r * count, count, ncclFloat32,
          [&](size_t i) { return inputValue(r, i, ncclFloat32, ncclSum, 9); }, 1, ncclSum, 1);
    if (ncclAlltoAll(send.data(), recv.data(), count, ncclFloat32, comm, nullptr) != ncclSuccess) return 4;
    for (int j = 0; j < 2; ++j)
      c.expect(
          recv.data() + j * count, count, ncclFloat32,
          [&](size_t i) { return inputValue(j, rank * count + i, ncclFloat32, ncclSum, 9); }, 1, ncclSum, 2);
    if (ncclBroadcast(send.data(), recv.data(), count, ncclFloat32, 1, comm, nullptr) != ncclSuccess) return 5;
    c.expect(
        recv.data(), count, ncclFloat32, [&](size_t i) { return inputValue(1, i, ncclFloat32, ncclSum, 9); }, 1,
        ncclSum, 3);
    if (ncclAllReduce(send.data(), recv.data(), count, ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess) return 7;
    c.expect(
        recv.data(), count, ncclFloat32, [&](size_t i) { return expectedReduction(2, i, ncclFloat32, ncclSum, 9); }, 2,
        ncclSum, 4);
    if (ncclReduce(send.data(), recv.data(), count, ncclFloat32, ncclSum, 0, comm, nullptr) != ncclSuccess) return 8;
    if (rank == 0)
      c.expect(
          recv.data(), count, ncclFloat32, [&](size_t i) { return expectedReduction(2, i, ncclFloat32, ncclSum, 9); },
          2, ncclSum, 5);
    if (ncclGather(send.data(), recv.data(), count, ncclFloat32, 1, comm, nullptr) != ncclSuccess) return 9;
    if (rank == 1)
      for (int r = 0; r < 2; ++r)
        c.expect(
            recv.data() + r * count, count, ncclFloat32,
            [&](size_t i) { return inputValue(r, i, ncclFloat32, ncclSum, 9); }, 1, ncclSum, 6);
    if (ncclScatter(send.data(), recv.data(), count, ncclFloat32, 0, comm, nullptr) != ncclSuccess) return 10;
    c.expect(
        recv.data(), count, ncclFloat32,
        [&](size_t i) { return inputValue(0, rank * count + i, ncclFloat32, ncclSum, 9); }, 1, ncclSum, 7);
    ncclCommDestroy(comm);
    return c.failures == 0 ? 0 : 6;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

// All-to-all-v written as a loop of sends and receives in random order inside a group, the
// way PyTorch does it; per-pair sizes differ.
TEST(PointToPoint, AllToAllVFromSendRecvInRandomOrder) {
  const int n = 4;
  auto outcomes = runRankProcesses(n, [&](int rank, const ncclUniqueId& id) {
    ncclComm_t comm;
    if (ncclCommInitRank(&comm, n, id, rank) != ncclSuccess) return 1;
    auto pairCount = [](int from, int to) { return static_cast<size_t>(1000 * (from + 1) + 17 * to); };
    std::vector<std::vector<int64_t>> sendBlocks(n), recvBlocks(n);
    for (int p = 0; p < n; ++p) {
      sendBlocks[p].resize(pairCount(rank, p));
      for (size_t i = 0; i < sendBlocks[p].size(); ++i) sendBlocks[p][i] = rank * 1000000 + p * 10000 + i;
      recvBlocks[p].assign(pairCount(p, rank), -1);
    }
    std::vector<int> order;
    for (int p = 0; p < 2 * n; ++p) order.push_back(p);
    std::shuffle(order.begin(), order.end(), std::mt19937(rank + 5));
    ncclGroupStart();
    for (int k : order) {
      int p = k % n;
      ncclResult_t r = k < n ? ncclSend(sendBlocks[p].data(), sendBlocks[p].size(), ncclInt64, p, comm, nullptr)
                             : ncclRecv(recvBlocks[p].data(), recvBlocks[p].size(), ncclInt64, p, comm, nullptr);
      if (r != ncclSuccess) return 2;
    }
    if (ncclGroupEnd() != ncclSuccess) {
      fprintf(stderr, "rank %d: %s\n", rank, ncclGetLastError(comm));
      return 3;
    }
    for (int p = 0; p < n; ++p)
      for (size_t i = 0; i < recvBlocks[p].size(); ++i)
        if (recvBlocks[p][i] != static_cast<int64_t>(p * 1000000 + rank * 10000 + i)) return 4;
    ncclCommDestroy(comm);
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

// An exchange in place, as nccl-tests' sendrecv_perf does in-place: one buffer is both the send
// and the receive of a group. A receive may overwrite a part of the buffer only after the send
// has taken it; with one-slot rings and many slices the sender waits on the peer for room, so a
// receive that ran ahead would overwrite slices not yet sent (the peer then gets its own data
// back). Found by UCX, whose sender waits for the receiver's credits.
TEST(PointToPoint, InPlaceExchangeNeverOverwritesWhatIsStillToBeSent) {
  const size_t count = 64 * 1024;  // 256 KiB of int32: 64 slices of 4 KiB
  auto outcomes = runRankProcesses(2, [&](int rank, const ncclUniqueId& id) {
    setenv("WEFT_SHM_SLOTS", "1", 1);
    setenv("WEFT_SLICE_BYTES", "4096", 1);
    ncclComm_t comm;
    if (ncclCommInitRank(&comm, 2, id, rank) != ncclSuccess) return 1;
    const int peer = 1 - rank;
    std::vector<int32_t> buffer(count);
    for (int round = 0; round < 20; ++round) {
      for (size_t i = 0; i < count; ++i) buffer[i] = static_cast<int32_t>(rank * 100000000 + round * 1000000 + i);
      ncclGroupStart();
      ncclSend(buffer.data(), count, ncclInt32, peer, comm, nullptr);
      ncclRecv(buffer.data(), count, ncclInt32, peer, comm, nullptr);
      if (ncclGroupEnd() != ncclSuccess) return 2;
      for (size_t i = 0; i < count; ++i)
        if (buffer[i] != static_cast<int32_t>(peer * 100000000 + round * 1000000 + i)) {
          fprintf(stderr, "rank %d round %d: element %zu is %d, expected the peer's %d\n", rank, round, i, buffer[i],
                  static_cast<int32_t>(peer * 100000000 + round * 1000000 + i));
          return 3;
        }
    }
    ncclCommDestroy(comm);
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

// Mixed collectives in one group, and a PreMulSum operator.
TEST(Groups, MixedCollectivesAndPreMulSum) {
  const int n = 3;
  auto outcomes = runRankProcesses(n, [&](int rank, const ncclUniqueId& id) {
    ncclComm_t comm;
    if (ncclCommInitRank(&comm, n, id, rank) != ncclSuccess) return 1;
    const size_t count = 5000;
    std::vector<double> a(count), b(count), gathered(n * count);
    fillInput(a.data(), count, rank, ncclFloat64, ncclSum, 3);
    fillInput(b.data(), count, rank, ncclFloat64, ncclSum, 4);
    double two = 2.0;
    ncclRedOp_t premul;
    if (ncclRedOpCreatePreMulSum(&premul, &two, ncclFloat64, ncclScalarHostImmediate, comm) != ncclSuccess) return 2;
    ncclGroupStart();
    ncclAllReduce(a.data(), a.data(), count, ncclFloat64, premul, comm, nullptr);
    ncclAllGather(b.data(), gathered.data(), count, ncclFloat64, comm, nullptr);
    // A bad argument inside the group fails that call only; the group and the comm carry on.
    if (ncclAllReduce(a.data(), a.data(), count, static_cast<ncclDataType_t>(77), ncclSum, comm, nullptr) !=
        ncclInvalidArgument)
      return 3;
    if (ncclGroupEnd() != ncclSuccess) return 4;
    Checker c{rank, "group"};
    c.expect(
        a.data(), count, ncclFloat64, [&](size_t i) { return 2 * expectedReduction(n, i, ncclFloat64, ncclSum, 3); }, n,
        ncclSum, 0);
    for (int r = 0; r < n; ++r)
      c.expect(
          gathered.data() + r * count, count, ncclFloat64,
          [&](size_t i) { return inputValue(r, i, ncclFloat64, ncclSum, 4); }, 1, ncclSum, 1);
    if (ncclRedOpDestroy(premul, comm) != ncclSuccess) return 5;
    if (ncclAllReduce(a.data(), a.data(), count, ncclFloat64, premul, comm, nullptr) != ncclInvalidArgument) return 6;
    ncclCommDestroy(comm);
    return c.failures == 0 ? 0 : 7;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

// Two communicators (all-thread ranks) in one group from one thread.
TEST(Groups, TwoCommunicatorsInOneGroup) {
  ncclComm_t first[2], second[2];
  ASSERT_EQ(ncclCommInitAll(first, 2, nullptr), ncclSuccess);
  ASSERT_EQ(ncclCommInitAll(second, 2, nullptr), ncclSuccess);
  std::vector<float> x[2], y[2];
  for (int r = 0; r < 2; ++r) {
    x[r].assign(1000, r + 1.0f);
    y[r].assign(1000, (r + 1) * 10.0f);
  }
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(ncclAllReduce(x[r].data(), x[r].data(), 1000, ncclFloat32, ncclSum, first[r], nullptr), ncclSuccess);
    ASSERT_EQ(ncclBroadcast(y[r].data(), y[r].data(), 1000, ncclFloat32, 1, second[r], nullptr), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(x[r][999], 3.0f);
    EXPECT_EQ(y[r][0], 20.0f);
  }
  for (int r = 0; r < 2; ++r) {
    ncclCommDestroy(first[r]);
    ncclCommDestroy(second[r]);
  }
}

}  // namespace

namespace {

TEST(PreMulSum, DeviceResidenceReadsTheScalarWhenTheCollectiveRuns) {
  ncclComm_t comms[2];
  ASSERT_EQ(ncclCommInitAll(comms, 2, nullptr), ncclSuccess);
  double scalar[2] = {1.0, 1.0};
  ncclRedOp_t ops[2];
  for (int r = 0; r < 2; ++r)
    ASSERT_EQ(ncclRedOpCreatePreMulSum(&ops[r], &scalar[r], ncclFloat64, ncclScalarDevice, comms[r]), ncclSuccess);
  scalar[0] = 3.0;  // changed after creation: ncclScalarDevice sees it
  scalar[1] = 5.0;
  double x[2] = {1.0, 2.0}, y[2];
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < 2; ++r)
    ASSERT_EQ(ncclAllReduce(&x[r], &y[r], 1, ncclFloat64, ops[r], comms[r], nullptr), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(y[0], 3.0 * 1.0 + 5.0 * 2.0);
  EXPECT_EQ(y[1], y[0]);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(ncclRedOpDestroy(ops[r], comms[r]), ncclSuccess);
    ncclCommDestroy(comms[r]);
  }
}

// ncclGroupSimulateEnd prices the group without running it: a larger call costs more, calls
// on one communicator add up (they run one after another), calls on different communicators
// overlap (the group takes as long as the slowest).
TEST(Groups, SimulateEndPredictsWithoutRunning) {
  ncclComm_t comms[2], others[2];
  ASSERT_EQ(ncclCommInitAll(comms, 2, nullptr), ncclSuccess);
  ASSERT_EQ(ncclCommInitAll(others, 2, nullptr), ncclSuccess);
  std::vector<float> data[2] = {std::vector<float>(1 << 20, 1.0f), std::vector<float>(1 << 20, 1.0f)};
  // Simulates one group of `calls` all-reduces of `count` floats on each rank of `on`.
  auto simulate = [&](std::vector<std::pair<ncclComm_t*, size_t>> calls) {
    ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
    EXPECT_EQ(ncclGroupStart(), ncclSuccess);
    for (auto [on, count] : calls)
      for (int r = 0; r < 2; ++r)
        EXPECT_EQ(ncclAllReduce(data[r].data(), data[r].data(), count, ncclFloat32, ncclSum, on[r], nullptr),
                  ncclSuccess);
    EXPECT_EQ(ncclGroupSimulateEnd(&info), ncclSuccess);
    return static_cast<double>(info.estimatedTime);
  };
  const double small = simulate({{comms, 16}}), large = simulate({{comms, 1 << 20}});
  const double medium = simulate({{others, 1 << 16}});
  EXPECT_GT(small, 0.0);
  EXPECT_GT(large, small);
  EXPECT_GT(large, medium);
  EXPECT_NEAR(simulate({{comms, 1 << 20}, {comms, 16}}), large + small, 1e-4 * large) << "one communicator: in turn";
  EXPECT_NEAR(simulate({{comms, 1 << 20}, {others, 1 << 16}}), large, 1e-4 * large) << "two: side by side";
  EXPECT_NEAR(simulate({{comms, 16}, {others, 1 << 16}}), medium, 1e-4 * medium);
  EXPECT_EQ(data[0][0], 1.0f) << "a simulated group must not run";
  EXPECT_EQ(data[1][(1 << 20) - 1], 1.0f);
  ncclSimInfo_t uninitialized{};
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclGroupSimulateEnd(&uninitialized), ncclInvalidArgument);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
  for (auto* c : comms) ncclCommDestroy(c);
  for (auto* c : others) ncclCommDestroy(c);
}

}  // namespace
