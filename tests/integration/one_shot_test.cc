// The one-shot all-reduce (runtime/exec/one_shot.h): which calls take it, the same bits on every
// rank, mailboxes reused across thousands of calls mixed with scheduled ones, and the errors
// of a mismatched call, a dead peer and a peer that never comes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "nccl.h"
#include "runtime/comm/communicator.h"
#include "tests/support/multiprocess.h"

using namespace weft;
using namespace weft::testing;

namespace {

ncclComm_t initOrNull(int rank, int nranks, const ncclUniqueId& id) {
  ncclComm_t comm = nullptr;
  if (ncclCommInitRank(&comm, nranks, id, rank) != ncclSuccess) {
    fprintf(stderr, "rank %d: init failed: %s\n", rank, ncclGetLastError(nullptr));
    return nullptr;
  }
  return comm;
}

// The algorithm the communicator's record names for its last collective.
std::string lastAlgorithm(ncclComm_t comm) {
  const std::vector<const CollectiveRecord*> entries = comm->exec.records.entries();
  return entries.empty() ? std::string("(none)") : std::string(entries.back()->algorithm);
}

// All-reduces `count` floats (each rank contributes rank + 1 at every index) and returns the
// recorded algorithm, or "" after printing what went wrong.
std::string allReduceAlgorithm(ncclComm_t comm, int rank, int nranks, size_t count) {
  std::vector<float> send(count, static_cast<float>(rank + 1)), recv(count, -1.0f);
  if (ncclAllReduce(send.data(), recv.data(), count, ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess) {
    fprintf(stderr, "rank %d: count %zu failed: %s\n", rank, count, ncclGetLastError(comm));
    return "";
  }
  const float expected = static_cast<float>(nranks * (nranks + 1) / 2);
  for (size_t i = 0; i < count; ++i)
    if (recv[i] != expected) {
      fprintf(stderr, "rank %d: count %zu element %zu is %g, expected %g\n", rank, count, i, recv[i], expected);
      return "";
    }
  return lastAlgorithm(comm);
}

// Which all-reduces the record shows as one-shot under the environment `variable`=`value`
// (none: unset), on 3 ranks: "<algorithm of 2 floats>,<of 1024 floats>,<of 1025 floats>".
std::string algorithmsUnder(const char* variable, const char* value) {
  const std::string path = "/tmp/weft-one-shot-algorithms." + std::to_string(getpid());
  auto outcomes = runRankProcesses(3, [&](int rank, const ncclUniqueId& id) {
    if (variable) setenv(variable, value, 1);
    ncclComm_t comm = initOrNull(rank, 3, id);
    if (!comm) return 1;
    std::string seen;
    for (size_t count : {size_t{2}, size_t{1024}, size_t{1025}}) {
      const std::string algorithm = allReduceAlgorithm(comm, rank, 3, count);
      if (algorithm.empty()) return 2;
      seen += (seen.empty() ? "" : ",") + algorithm;
    }
    ncclCommDestroy(comm);
    return rank == 0 && !putRankAnswer(path, seen) ? 3 : 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
  return takeRankAnswer(path);
}

TEST(OneShot, SmallAllReducesTakeItUpToTheThresholdAndForcedAlgorithmsTurnItOff) {
  const std::string byDefault = algorithmsUnder(nullptr, nullptr);
  // 4 KiB (the default WEFT_ONE_SHOT_MAX_BYTES) is the largest one-shot call.
  EXPECT_EQ(byDefault.substr(0, byDefault.rfind(',')), "one-shot,one-shot") << byDefault;
  EXPECT_EQ(byDefault.find("one-shot", byDefault.rfind(',')), std::string::npos) << byDefault;
  EXPECT_EQ(algorithmsUnder("WEFT_ONE_SHOT_MAX_BYTES", "0").find("one-shot"), std::string::npos);
  EXPECT_EQ(algorithmsUnder("WEFT_ONE_SHOT_MAX_BYTES", "8").substr(0, 9), "one-shot,");
  EXPECT_EQ(algorithmsUnder("WEFT_ALGO", "ring").find("one-shot"), std::string::npos);
}

// Float addition is not associative: 1e8 + 1 - 1e8 + 1 depends on the order. Every rank must
// return the sum taken in rank order, bit for bit, computed here independently.
TEST(OneShot, EveryRankReturnsTheRankOrderSumBitForBit) {
  constexpr int kRanks = 4;
  const float inputs[kRanks][3] = {{1e8f, 3.0f, 0.1f}, {1.0f, -3.0f, 0.2f}, {-1e8f, 1e-7f, 0.3f}, {1.0f, 7.0f, 0.4f}};
  auto outcomes = runRankProcesses(kRanks, [&](int rank, const ncclUniqueId& id) {
    ncclComm_t comm = initOrNull(rank, kRanks, id);
    if (!comm) return 1;
    float out[3];
    float inPlace[3];
    memcpy(inPlace, inputs[rank], sizeof inPlace);
    if (ncclAllReduce(inputs[rank], out, 3, ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess ||
        ncclAllReduce(inPlace, inPlace, 3, ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess)
      return 2;
    if (lastAlgorithm(comm) != "one-shot") return 3;
    ncclCommDestroy(comm);
    for (int i = 0; i < 3; ++i) {
      volatile float expected = inputs[0][i];  // volatile: rounded to float after every addition
      for (int r = 1; r < kRanks; ++r) expected = expected + inputs[r][i];
      const float want = expected;
      if (memcmp(&out[i], &want, sizeof want) != 0 || memcmp(&inPlace[i], &want, sizeof want) != 0) {
        fprintf(stderr, "rank %d element %d: %.9g and %.9g in place, expected %.9g\n", rank, i, out[i], inPlace[i],
                want);
        return 4;
      }
    }
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

// A mailbox is reused every second call: thousands of calls back to back, of changing sizes,
// in and out of place, mixed with scheduled all-reduces and broadcasts, every result checked.
TEST(OneShot, MailboxesSurviveThousandsOfCallsMixedWithScheduledOnes) {
  constexpr int kRanks = 3;
  const int calls = countFromEnv("WEFT_ONE_SHOT_CALLS", 3000);
  auto outcomes = runRankProcesses(kRanks, [&](int rank, const ncclUniqueId& id) {
    ncclComm_t comm = initOrNull(rank, kRanks, id);
    if (!comm) return 1;
    std::vector<int32_t> send(2048), recv(2048);
    unsigned state = 12345;  // the same sequence on every rank
    for (int call = 0; call < calls; ++call) {
      state = state * 1103515245u + 12345u;
      const size_t count = 1 + (state >> 8) % 1100;  // up to 4400 bytes: mostly one-shot
      const bool inPlace = (state >> 20) & 1;
      const bool broadcast = ((state >> 21) & 7) == 0;
      for (size_t i = 0; i < count; ++i) send[i] = static_cast<int32_t>((call + 1) * (rank + 1) + i);
      int32_t* out = inPlace ? send.data() : recv.data();
      ncclResult_t result = broadcast ? ncclBroadcast(send.data(), out, count, ncclInt32, call % kRanks, comm, nullptr)
                                      : ncclAllReduce(send.data(), out, count, ncclInt32, ncclSum, comm, nullptr);
      if (result != ncclSuccess) {
        fprintf(stderr, "rank %d call %d: %s\n", rank, call, ncclGetLastError(comm));
        return 2;
      }
      for (size_t i = 0; i < count; ++i) {
        const int32_t root = call % kRanks;
        const int32_t expected = broadcast ? static_cast<int32_t>((call + 1) * (root + 1) + i)
                                           : static_cast<int32_t>((call + 1) * kRanks * (kRanks + 1) / 2 + kRanks * i);
        if (out[i] != expected) {
          fprintf(stderr, "rank %d call %d (%s of %zu) element %zu: %d, expected %d\n", rank, call,
                  broadcast ? "broadcast" : "all-reduce", count, i, out[i], expected);
          return 3;
        }
      }
    }
    ncclCommDestroy(comm);
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

TEST(OneShot, DifferentCountsOnTheRanksAreAnErrorNamingThem) {
  auto outcomes = runRankProcesses(2, [&](int rank, const ncclUniqueId& id) {
    ncclComm_t comm = initOrNull(rank, 2, id);
    if (!comm) return 1;
    float data[4] = {1, 2, 3, 4};
    ncclResult_t result = ncclAllReduce(data, data, rank == 0 ? 2 : 3, ncclFloat32, ncclSum, comm, nullptr);
    const std::string message = ncclGetLastError(comm);
    if (result != ncclInvalidUsage || message.find("different counts") == std::string::npos) {
      fprintf(stderr, "rank %d: result %d, message: %s\n", rank, result, message.c_str());
      return 2;
    }
    ncclCommAbort(comm);
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

// A peer that exited is noticed within the wait's first checks, long before WEFT_TIMEOUT; a
// peer that is alive but never calls is reported at WEFT_TIMEOUT, naming the one-shot wait.
TEST(OneShot, ADeadPeerIsAnErrorAtOnceAndAnAbsentOneAtTheTimeOut) {
  auto outcomes = runRankProcesses(2, [&](int rank, const ncclUniqueId& id) {
    setenv("WEFT_TIMEOUT", "60", 1);
    ncclComm_t comm = initOrNull(rank, 2, id);
    if (!comm) return 1;
    float data[2] = {1, 2};
    if (ncclAllReduce(data, data, 2, ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess) return 2;
    if (rank == 1) _exit(0);  // gone without a word
    const auto start = std::chrono::steady_clock::now();
    ncclResult_t result = ncclAllReduce(data, data, 2, ncclFloat32, ncclSum, comm, nullptr);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string message = ncclGetLastError(comm);
    if (result != ncclRemoteError || message.find("died") == std::string::npos || seconds > 10) {
      fprintf(stderr, "rank 0: result %d after %.1f s: %s\n", result, seconds, message.c_str());
      return 3;
    }
    ncclCommAbort(comm);
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");

  outcomes = runRankProcesses(2, [&](int rank, const ncclUniqueId& id) {
    setenv("WEFT_TIMEOUT", "1", 1);
    setenv("WEFT_DUMP_ON_TIMEOUT", "0", 1);
    ncclComm_t comm = initOrNull(rank, 2, id);
    if (!comm) return 1;
    float data[2] = {1, 2};
    if (rank == 1) {  // alive, but never calls
      sleep(3);
      ncclCommAbort(comm);
      return 0;
    }
    ncclResult_t result = ncclAllReduce(data, data, 2, ncclFloat32, ncclSum, comm, nullptr);
    const std::string message = ncclGetLastError(comm);
    if (result != ncclRemoteError || message.find("WEFT_TIMEOUT") == std::string::npos ||
        message.find("one-shot: rank 1's input") == std::string::npos) {
      fprintf(stderr, "rank 0: result %d: %s\n", result, message.c_str());
      return 2;
    }
    ncclCommAbort(comm);
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

}  // namespace
