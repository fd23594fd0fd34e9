// Ranks on two fake hosts (WEFT_HOSTNAME): the communicator's layout keeps each host's ranks
// adjacent in the ring, same-host pairs talk over shared memory and the others over TCP, and
// the all-reduce is still right.
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

TEST(FakeHosts, LayoutRingAndTransportsFollowTheHosts) {
  // Ranks 0 and 2 on host A, 1 and 3 on host B: the ring must be 0 2 1 3.
  auto outcomes = runRankProcesses(4, [](int rank, const ncclUniqueId& id) {
    setenv("WEFT_HOSTNAME", rank % 2 == 0 ? "hostA" : "hostB", 1);
    ncclComm_t comm;
    if (ncclCommInitRank(&comm, 4, id, rank) != ncclSuccess) return 1;
    std::vector<int> expectedRing = {0, 2, 1, 3};
    if (comm->layout.ringOrder != expectedRing) return 2;
    if (comm->layout.localRanks.size() != 2 || comm->layout.localRank != rank / 2) return 3;
    // Ring neighbours: the same-host one over SHM, the other-host one over TCP.
    int sameHostPeer = rank ^ 2;
    int otherHostPeer = rank == 0 ? 3 : rank == 2 ? 1 : rank == 1 ? 2 : 0;
    if (!comm->net.connections[sameHostPeer] || strcmp(comm->net.connections[sameHostPeer]->transportName(), "SHM"))
      return 4;
    if (!comm->net.connections[otherHostPeer] || strcmp(comm->net.connections[otherHostPeer]->transportName(), "TCP"))
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

}  // namespace
