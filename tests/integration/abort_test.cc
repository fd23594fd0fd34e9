// ncclCommAbort from a second thread ends every call in flight on that communicator within a
// second, wherever the call is waiting (a large all-reduce still progressing, an all-to-all
// whose peer never posts, lazy connection set-up, a non-blocking initialization), and frees
// nothing the call still uses (run under ASan to see the last part). WEFT_ABORT_TRIALS sets
// how many times each case runs (the slow label runs 100).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>
#include <vector>

#include "nccl.h"
#include "tests/support/multiprocess.h"

using namespace weft::testing;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kAbortAfter = std::chrono::milliseconds(100);
constexpr auto kPromptly = std::chrono::milliseconds(1000);

int trials() { return countFromEnv("WEFT_ABORT_TRIALS", 2); }

// Runs `call` on a thread, aborts `comm` from this one after kAbortAfter, and returns 0 when
// both the abort and the call came back within kPromptly of the abort; `allowSuccess` accepts a
// call that finished first. Error codes tell the failures apart.
int abortWhileRunning(ncclComm_t comm, const std::function<ncclResult_t()>& call, bool allowSuccess) {
  std::atomic<bool> returned{false};
  std::atomic<int> result{-1};
  Clock::time_point returnedAt;
  std::thread caller([&] {
    result = call();
    returnedAt = Clock::now();
    returned = true;
  });
  std::this_thread::sleep_for(kAbortAfter);
  const Clock::time_point abortAt = Clock::now();
  const bool finishedFirst = returned.load();
  if (ncclCommAbort(comm) != ncclSuccess) {
    caller.join();
    return 50;
  }
  const Clock::time_point abortDone = Clock::now();
  caller.join();
  // One line per trial for the figures in docs/reliability.md (grep "abort-latency").
  auto ms = [](Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
  std::printf("abort-latency call_ms=%.1f abort_ms=%.1f finished_first=%d\n",
              finishedFirst ? 0.0 : ms(returnedAt - abortAt), ms(abortDone - abortAt), finishedFirst ? 1 : 0);
  std::fflush(stdout);
  if (abortDone - abortAt > kPromptly) return 51;
  if (!finishedFirst && returnedAt - abortAt > kPromptly) return 52;
  if (result == ncclSuccess && !(allowSuccess || finishedFirst)) return 53;
  if (result != ncclSuccess && result != ncclInvalidUsage && result != ncclRemoteError) return 54;
  return 0;
}

// A rank that never posts the call the other is aborted in: it stays alive until that rank is
// done (its connections must not vanish first), then leaves.
int stayIdleThenLeave(ncclComm_t comm) {
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  ncclCommDestroy(comm);
  return 0;
}

TEST(Abort, DuringA256MiBAllReduce) {
  const size_t count = (256u << 20) / sizeof(float);
  for (int t = 0; t < trials(); ++t) {
    auto outcomes = runRankProcesses(
        2,
        [&](int rank, const ncclUniqueId& id) {
          ncclComm_t comm;
          if (ncclCommInitRank(&comm, 2, id, rank) != ncclSuccess) return 1;
          std::vector<float> data(count, 1.0f);
          // A stream of them, so that the abort lands while one is progressing (each takes tens
          // of milliseconds here); ends at the first error.
          auto allReduces = [&] {
            ncclResult_t result = ncclSuccess;
            for (int i = 0; i < 200 && result == ncclSuccess; ++i)
              result = ncclAllReduce(data.data(), data.data(), count, ncclFloat32, ncclSum, comm, nullptr);
            return result;
          };
          if (rank == 0) return abortWhileRunning(comm, allReduces, false);
          // The other rank sees its peer abort: an error, never a hang.
          const Clock::time_point start = Clock::now();
          if (allReduces() == ncclSuccess) return 2;
          if (Clock::now() - start > std::chrono::seconds(20)) return 3;
          ncclCommDestroy(comm);
          return 0;
        },
        60);
    ASSERT_EQ(describeFailures(outcomes), "") << "trial " << t;
  }
}

TEST(Abort, DuringAnAllToAllWhosePeerNeverPosts) {
  for (int t = 0; t < trials(); ++t) {
    auto outcomes = runRankProcesses(
        2,
        [&](int rank, const ncclUniqueId& id) {
          ncclComm_t comm;
          if (ncclCommInitRank(&comm, 2, id, rank) != ncclSuccess) return 1;
          std::vector<float> send(2 << 16, 1.0f), recv(2 << 16);
          if (rank == 1) {  // never posts; stays alive until the other rank is done
            return stayIdleThenLeave(comm);
          }
          return abortWhileRunning(
              comm, [&] { return ncclAlltoAll(send.data(), recv.data(), 1 << 16, ncclFloat32, comm, nullptr); }, false);
        },
        60);
    ASSERT_EQ(describeFailures(outcomes), "") << "trial " << t;
  }
}

// Over TCP the higher rank of a pair waits for the lower one to connect. Ranks 0 and 2 of a
// ring of 4 are not neighbours, so their connection is made lazily, by the first call between
// them; rank 0 never makes it.
TEST(Abort, DuringLazyConnectionSetUp) {
  for (int t = 0; t < trials(); ++t) {
    auto outcomes = runRankProcesses(
        4,
        [&](int rank, const ncclUniqueId& id) {
          setenv("WEFT_TRANSPORT", "tcp", 1);
          ncclComm_t comm;
          if (ncclCommInitRank(&comm, 4, id, rank) != ncclSuccess) return 1;
          float x = 1;
          if (rank != 2) {
            return stayIdleThenLeave(comm);
          }
          return abortWhileRunning(
              comm, [&] { return ncclSend(&x, 1, ncclFloat32, 0, comm, nullptr); }, false);
        },
        60);
    ASSERT_EQ(describeFailures(outcomes), "") << "trial " << t;
  }
}

// Rank 1 never joins, so rank 0's non-blocking initialization waits for it at the bootstrap.
TEST(Abort, DuringNonBlockingInit) {
  for (int t = 0; t < trials(); ++t) {
    auto outcomes = runRankProcesses(
        2,
        [&](int rank, const ncclUniqueId& id) {
          if (rank == 1) return 0;
          ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
          config.blocking = 0;
          ncclComm_t comm = nullptr;
          if (ncclCommInitRankConfig(&comm, 2, id, 0, &config) != ncclInProgress) return 1;
          std::this_thread::sleep_for(kAbortAfter);
          ncclResult_t state = ncclSuccess;
          if (ncclCommGetAsyncError(comm, &state) != ncclSuccess || state != ncclInProgress) return 2;
          const Clock::time_point abortAt = Clock::now();
          if (ncclCommAbort(comm) != ncclSuccess) return 3;
          const auto took = Clock::now() - abortAt;
          std::printf("abort-latency call_ms=0.0 abort_ms=%.1f finished_first=0\n",
                      std::chrono::duration<double, std::milli>(took).count());
          return took < kPromptly ? 0 : 4;
        },
        60);
    ASSERT_EQ(describeFailures(outcomes), "") << "trial " << t;
  }
}

}  // namespace
