// Ranks on two fake hosts (WEFT_HOSTNAME): the communicator's layout keeps each host's ranks
// adjacent in the ring, same-host pairs talk over shared memory, and pairs across hosts over
// the network transport that WEFT_NET / NCCL_NET choose, or else the first both ends offer
// (UCX, then TCP); the all-reduce is right whichever it is. A transport forced between hosts
// that a rank does not offer fails every rank's init, naming that rank.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "nccl.h"
#include "runtime/comm/communicator.h"
#include "tests/support/multiprocess.h"
#include "tests/support/reference.h"

using namespace weft::testing;

namespace {

#ifdef WEFT_HAVE_UCX
constexpr bool kUcxBuilt = true;
#else
constexpr bool kUcxBuilt = false;
#endif

struct NetCase {
  const char* name;
  const char* variable;  // set on every rank (null: none)
  const char* value;
  bool rank1WithoutUcx;        // WEFT_UCX_DISABLE=1 on rank 1 only
  const char* expectedAcross;  // transport of the pair 3-0 across hosts
  const char* expectedRank1;   // transport of the pair 2-1 across hosts (rank 1's)
  bool needsUcx;
};

class FakeHosts : public ::testing::TestWithParam<NetCase> {};

// Ranks 0 and 2 on host A, 1 and 3 on host B: the ring must be 0 2 1 3, its cross-host pairs
// 2-1 and 3-0.
TEST_P(FakeHosts, LayoutRingAndTransportsFollowTheHostsAndTheNetChoice) {
  const NetCase c = GetParam();
  if (c.needsUcx && !kUcxBuilt) GTEST_SKIP() << "skipped: weft is built without UCX";
  auto outcomes = runRankProcesses(4, [&](int rank, const ncclUniqueId& id) {
    setenv("WEFT_HOSTNAME", rank % 2 == 0 ? "hostA" : "hostB", 1);
    if (c.variable) setenv(c.variable, c.value, 1);
    if (c.rank1WithoutUcx && rank == 1) setenv("WEFT_UCX_DISABLE", "1", 1);
    ncclComm_t comm;
    if (ncclCommInitRank(&comm, 4, id, rank) != ncclSuccess) return 1;
    std::vector<int> expectedRing = {0, 2, 1, 3};
    if (comm->layout.ringOrder != expectedRing) return 2;
    if (comm->layout.localRanks.size() != 2 || comm->layout.localRank != rank / 2) return 3;
    int sameHostPeer = rank ^ 2;
    int otherHostPeer = rank == 0 ? 3 : rank == 2 ? 1 : rank == 1 ? 2 : 0;
    const char* expected = (rank == 1 || rank == 2) ? c.expectedRank1 : c.expectedAcross;
    if (!comm->net.connections[sameHostPeer] || strcmp(comm->net.connections[sameHostPeer]->transportName(), "SHM"))
      return 4;
    if (!comm->net.connections[otherHostPeer] ||
        strcmp(comm->net.connections[otherHostPeer]->transportName(), expected))
      return 5;
    std::vector<float> data(300001);
    fillInput(data.data(), data.size(), rank, ncclFloat32, ncclSum, 11);
    if (ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess)
      return 6;
    size_t wrong = countMismatches(data.data(), data.size(), 4, ncclFloat32, ncclSum, 11, "fake hosts");
    ncclCommDestroy(comm);
    return wrong == 0 ? 0 : 7;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

const char* kDefaultNet = kUcxBuilt ? "UCX" : "TCP";

INSTANTIATE_TEST_SUITE_P(Nets, FakeHosts,
                         ::testing::Values(NetCase{"auto", nullptr, nullptr, false, kDefaultNet, kDefaultNet, false},
                                           NetCase{"weft_net_tcp", "WEFT_NET", "tcp", false, "TCP", "TCP", false},
                                           NetCase{"nccl_net_socket", "NCCL_NET", "Socket", false, "TCP", "TCP", false},
                                           NetCase{"weft_net_ucx", "WEFT_NET", "ucx", false, "UCX", "UCX", true},
                                           NetCase{"nccl_net_ucx", "NCCL_NET", "ucx", false, "UCX", "UCX", true},
                                           // Per pair: the pair with rank 1 falls back to TCP, the other keeps UCX.
                                           NetCase{"rank1_without_ucx", nullptr, nullptr, true, "UCX", "TCP", true}),
                         [](const ::testing::TestParamInfo<NetCase>& info) { return std::string(info.param.name); });

TEST(FakeHostsForcedNet, ATransportOneRankDoesNotOfferFailsEveryRanksInitNamingIt) {
  if (!kUcxBuilt) GTEST_SKIP() << "skipped: weft is built without UCX";
  auto outcomes = runRankProcesses(4, [](int rank, const ncclUniqueId& id) {
    setenv("WEFT_HOSTNAME", rank % 2 == 0 ? "hostA" : "hostB", 1);
    setenv("WEFT_NET", "ucx", 1);
    setenv("WEFT_TIMEOUT", "20", 1);
    if (rank == 1) setenv("WEFT_UCX_DISABLE", "1", 1);
    ncclComm_t comm;
    if (ncclCommInitRank(&comm, 4, id, rank) != ncclInvalidUsage) return 1;
    const std::string error = ncclGetLastError(nullptr);
    if (error.find("rank 1 (host hostB) does not offer the ucx transport") == std::string::npos) {
      fprintf(stderr, "rank %d: %s\n", rank, error.c_str());
      return 2;
    }
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

TEST(FakeHostsForcedNet, AnUnknownNcclNetIsAnInvalidArgument) {
  // In a rank process: the parent starts no bootstrap root (a thread) that later forks would meet.
  auto outcomes = runRankProcesses(1, [](int rank, const ncclUniqueId& id) {
    setenv("NCCL_NET", "Carrier-Pigeon", 1);
    ncclComm_t comm = nullptr;
    if (ncclCommInitRank(&comm, 1, id, rank) != ncclInvalidArgument) return 1;
    const std::string error = ncclGetLastError(nullptr);
    if (error.find("NCCL_NET=Carrier-Pigeon") == std::string::npos) {
      fprintf(stderr, "%s\n", error.c_str());
      return 2;
    }
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

}  // namespace
