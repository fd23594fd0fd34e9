// A rank waiting on a live peer while another peer of the same call has closed its TCP
// connection normally (it finished and destroyed its communicator) sleeps instead of spinning:
// the closed socket reads as end of file, which used to wake every poll() at once until the
// wait ended. Checked with the waiter's CPU time (getrusage) against the wall time.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "nccl.h"
#include "tests/support/multiprocess.h"

using namespace weft::testing;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kLateSender = std::chrono::milliseconds(1500);

double cpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

TEST(ClosedPeer, WaiterSleepsWhileAnotherPeerHasClosed) {
  auto outcomes = runRankProcesses(3, [](int rank, const ncclUniqueId& id) {
    setenv("WEFT_TRANSPORT", "tcp", 1);
    ncclComm_t comm = nullptr;
    if (ncclCommInitRank(&comm, 3, id, rank) != ncclSuccess) return 10;
    int value = rank;
    if (rank == 2) {  // sends and leaves: its socket to rank 0 is closed normally
      if (ncclSend(&value, 1, ncclInt32, 0, comm, nullptr) != ncclSuccess) return 11;
      ncclCommDestroy(comm);
      return 0;
    }
    if (rank == 1) {  // late: rank 0 waits for it after rank 2 has gone
      std::this_thread::sleep_for(kLateSender);
      if (ncclSend(&value, 1, ncclInt32, 0, comm, nullptr) != ncclSuccess) return 12;
      ncclCommDestroy(comm);
      return 0;
    }
    int fromOne = -1, fromTwo = -1;
    const double cpuBefore = cpuSeconds();
    const Clock::time_point start = Clock::now();
    if (ncclGroupStart() != ncclSuccess) return 13;
    ncclRecv(&fromTwo, 1, ncclInt32, 2, comm, nullptr);
    ncclRecv(&fromOne, 1, ncclInt32, 1, comm, nullptr);
    if (ncclGroupEnd() != ncclSuccess) return 14;
    const double wall = std::chrono::duration<double>(Clock::now() - start).count();
    const double cpu = cpuSeconds() - cpuBefore;
    std::printf("closed-peer wait wall_s=%.3f cpu_s=%.3f\n", wall, cpu);
    std::fflush(stdout);
    ncclCommDestroy(comm);
    if (fromOne != 1 || fromTwo != 2) return 15;
    if (wall < 1.0) return 16;         // rank 1 really was late
    if (cpu > 0.25 * wall) return 17;  // spinning: nearly one core for the whole wait
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

}  // namespace
