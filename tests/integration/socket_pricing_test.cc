// Same-host ranks that talk through sockets (WEFT_TRANSPORT=tcp, NCCL_SHM_DISABLE=1) are priced
// with the cost model's Loopback link, not as shared memory: a socket message costs
// microseconds, so a 2-rank all-reduce of 256 KiB takes one exchange of the whole buffer
// (doubling) there, where over shared memory the ring's two half-size steps are cheaper.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "nccl.h"
#include "runtime/comm/communicator.h"
#include "tests/support/multiprocess.h"

using namespace weft;
using namespace weft::testing;

namespace {

// The algorithm rank 0's record names for a correct 2-rank all-reduce of `count` floats under
// `variable`=`value` (none: unset), or "" after printing what went wrong.
std::string allReduceAlgorithmUnder(const char* variable, const char* value, size_t count) {
  const std::string path = "/tmp/weft-socket-pricing." + std::to_string(getpid());
  auto outcomes = runRankProcesses(2, [&](int rank, const ncclUniqueId& id) {
    if (variable) setenv(variable, value, 1);
    ncclComm_t comm = nullptr;
    if (ncclCommInitRank(&comm, 2, id, rank) != ncclSuccess) {
      fprintf(stderr, "rank %d: init failed: %s\n", rank, ncclGetLastError(nullptr));
      return 1;
    }
    std::vector<float> send(count, static_cast<float>(rank + 1)), recv(count, -1.0f);
    if (ncclAllReduce(send.data(), recv.data(), count, ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess) {
      fprintf(stderr, "rank %d: all-reduce failed: %s\n", rank, ncclGetLastError(comm));
      return 2;
    }
    for (size_t i = 0; i < count; ++i)
      if (recv[i] != 3.0f) {
        fprintf(stderr, "rank %d: element %zu is %g, expected 3\n", rank, i, recv[i]);
        return 3;
      }
    const std::vector<const CollectiveRecord*> entries = comm->exec.records.entries();
    const std::string algorithm = entries.empty() ? "(none)" : entries.back()->algorithm;
    ncclCommDestroy(comm);
    return rank == 0 && !putRankAnswer(path, algorithm) ? 4 : 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
  return takeRankAnswer(path);
}

TEST(SocketPricing, SameHostSocketsTakeOneExchangeWhereSharedMemoryTakesTheRing) {
  const size_t count = 65536;  // 256 KiB
  EXPECT_EQ(allReduceAlgorithmUnder("WEFT_TRANSPORT", "tcp", count), "doubling");
  EXPECT_EQ(allReduceAlgorithmUnder("NCCL_SHM_DISABLE", "1", count), "doubling");
  EXPECT_EQ(allReduceAlgorithmUnder(nullptr, nullptr, count), "ring");
}

}  // namespace
