// Bad arguments get ncclInvalidArgument/ncclInvalidUsage and a message naming the argument;
// a peer that never arrives or dies gets an error within WEFT_TIMEOUT, never a hang; a
// stranger at the bootstrap port is rejected while the real ranks carry on.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/socket.h"
#include "nccl.h"
#include "runtime/comm/bootstrap.h"
#include "runtime/comm/unique_id.h"
#include "tests/support/multiprocess.h"
#include "tests/support/reference.h"
#include "weft/weft.h"

using namespace weft;
using namespace weft::testing;

namespace {

std::string lastError() { return ncclGetLastError(nullptr); }

class SingleRank : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(ncclCommInitAll(&comm_, 1, nullptr), ncclSuccess) << lastError(); }
  void TearDown() override { ncclCommDestroy(comm_); }
  ncclComm_t comm_ = nullptr;
  float buffer_[16] = {};
};

TEST_F(SingleRank, NullCommunicator) {
  EXPECT_EQ(ncclAllReduce(buffer_, buffer_, 4, ncclFloat32, ncclSum, nullptr, nullptr), ncclInvalidArgument);
  EXPECT_NE(lastError().find("comm"), std::string::npos) << lastError();
}

TEST_F(SingleRank, BadDatatype) {
  EXPECT_EQ(ncclAllReduce(buffer_, buffer_, 4, static_cast<ncclDataType_t>(42), ncclSum, comm_, nullptr),
            ncclInvalidArgument);
  EXPECT_NE(lastError().find("datatype"), std::string::npos) << lastError();
  EXPECT_EQ(ncclAllReduce(buffer_, buffer_, 4, static_cast<ncclDataType_t>(-1), ncclSum, comm_, nullptr),
            ncclInvalidArgument);
}

TEST_F(SingleRank, BadOp) {
  EXPECT_EQ(ncclAllReduce(buffer_, buffer_, 4, ncclFloat32, static_cast<ncclRedOp_t>(17), comm_, nullptr),
            ncclInvalidArgument);
  EXPECT_NE(lastError().find("op"), std::string::npos) << lastError();
}

TEST_F(SingleRank, NullBuffersWithCount) {
  EXPECT_EQ(ncclAllReduce(nullptr, buffer_, 4, ncclFloat32, ncclSum, comm_, nullptr), ncclInvalidArgument);
  EXPECT_NE(lastError().find("sendbuff"), std::string::npos) << lastError();
  EXPECT_EQ(ncclAllReduce(buffer_, nullptr, 4, ncclFloat32, ncclSum, comm_, nullptr), ncclInvalidArgument);
  EXPECT_NE(lastError().find("recvbuff"), std::string::npos) << lastError();
  // Count 0 with NULL buffers is a valid no-op, as in NCCL.
  EXPECT_EQ(ncclAllReduce(nullptr, nullptr, 0, ncclFloat32, ncclSum, comm_, nullptr), ncclSuccess);
}

TEST_F(SingleRank, CountThatOverflows) {
  EXPECT_EQ(ncclAllReduce(buffer_, buffer_, SIZE_MAX / 2, ncclFloat64, ncclSum, comm_, nullptr), ncclInvalidArgument);
  EXPECT_NE(lastError().find("count"), std::string::npos) << lastError();
}

TEST_F(SingleRank, CommunicatorStaysUsableAfterBadArguments) {
  EXPECT_EQ(ncclAllReduce(buffer_, buffer_, 4, static_cast<ncclDataType_t>(42), ncclSum, comm_, nullptr),
            ncclInvalidArgument);
  buffer_[0] = 3;
  EXPECT_EQ(ncclAllReduce(buffer_, buffer_, 4, ncclFloat32, ncclSum, comm_, nullptr), ncclSuccess);
  EXPECT_EQ(buffer_[0], 3);
}

TEST(InitArguments, AreChecked) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comm;
  EXPECT_EQ(ncclCommInitRank(nullptr, 2, id, 0), ncclInvalidArgument);
  EXPECT_EQ(ncclCommInitRank(&comm, 0, id, 0), ncclInvalidArgument);
  EXPECT_NE(lastError().find("nranks"), std::string::npos) << lastError();
  EXPECT_EQ(ncclCommInitRank(&comm, 2, id, 2), ncclInvalidArgument);
  EXPECT_NE(lastError().find("rank"), std::string::npos) << lastError();
  ncclUniqueId garbage{};
  EXPECT_EQ(ncclCommInitRank(&comm, 2, garbage, 0), ncclInvalidArgument);
  EXPECT_NE(lastError().find("commId"), std::string::npos) << lastError();
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.magic = 0;
  EXPECT_EQ(ncclCommInitRankConfig(&comm, 1, id, 0, &config), ncclInvalidArgument);
  EXPECT_NE(lastError().find("config"), std::string::npos) << lastError();
  EXPECT_EQ(ncclGetUniqueId(nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclCommCount(nullptr, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
}

// A bad setting fails communicator creation on every rank, before bootstrap, with a message
// naming the variable, its value and what is valid (not a slow or failing collective later).
TEST(BadSetting, FailsInitNamingTheVariable) {
  const char* const cases[][3] = {{"WEFT_SLICE_BYTES", "-5", "an integer from 4096 to 1073741824"},
                                  {"WEFT_TIMEOUT", "abc", "a number from"},
                                  {"WEFT_TCP_SLOTS", "0", "an integer from 1 to 64"}};
  for (const auto& c : cases) {
    auto outcomes = runRankProcesses(
        2,
        [&](int rank, const ncclUniqueId& id) {
          setenv(c[0], c[1], 1);
          ncclComm_t comm = nullptr;
          if (ncclCommInitRank(&comm, 2, id, rank) != ncclInvalidArgument) return 1;
          const std::string message = ncclGetLastError(nullptr);
          const std::string expected = std::string(c[0]) + "=" + c[1] + " is invalid: expected " + c[2];
          return message.find(expected) != std::string::npos ? 0 : 2;
        },
        30);
    EXPECT_EQ(describeFailures(outcomes), "") << c[0] << "=" << c[1];
  }
}

TEST(Timeout, PeerThatNeverArrives) {
  auto outcomes = runRankProcesses(
      1,
      [](int, const ncclUniqueId& id) {
        setenv("WEFT_TIMEOUT", "2", 1);
        auto start = std::chrono::steady_clock::now();
        ncclComm_t comm;
        ncclResult_t result = ncclCommInitRank(&comm, 2, id, 0);  // rank 1 never comes
        double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (result == ncclSuccess) return 1;
        if (seconds > 10) return 2;
        if (std::string(ncclGetLastError(nullptr)).find("WEFT_TIMEOUT") == std::string::npos) return 3;
        return 0;
      },
      30);
  EXPECT_EQ(describeFailures(outcomes), "");
}

// weftCommSetTimeout bounds one communicator's calls (torch.distributed's timeout=), whatever
// WEFT_TIMEOUT says: the peer is alive but never makes the call.
TEST(Timeout, PerCommunicatorTimeoutBoundsACall) {
  auto outcomes = runRankProcesses(
      2,
      [](int rank, const ncclUniqueId& id) {
        setenv("WEFT_TIMEOUT", "60", 1);
        ncclComm_t comm;
        if (ncclCommInitRank(&comm, 2, id, rank) != ncclSuccess) return 1;
        if (rank == 1) {
          sleep(6);  // alive, silent
          return 0;
        }
        if (weftCommSetTimeout(comm, 0) != ncclInvalidArgument) return 2;
        if (std::string(ncclGetLastError(comm)).find("seconds") == std::string::npos) return 3;
        if (weftCommSetTimeout(comm, 1.0) != ncclSuccess) return 4;
        std::vector<float> data(1024, 1.0f);
        auto start = std::chrono::steady_clock::now();
        ncclResult_t result = ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat32, ncclSum, comm, nullptr);
        double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (result == ncclSuccess) return 5;
        if (seconds < 0.5 || seconds > 4) return 6;
        ncclCommAbort(comm);
        return 0;
      },
      60);
  EXPECT_EQ(describeFailures(outcomes), "");
}

TEST(Timeout, PeerThatDiesMidJob) {
  for (const char* transport : {"shm", "tcp"}) {
    auto outcomes = runRankProcesses(
        2,
        [&](int rank, const ncclUniqueId& id) {
          setenv("WEFT_TRANSPORT", transport, 1);
          setenv("WEFT_TIMEOUT", "5", 1);
          ncclComm_t comm;
          if (ncclCommInitRank(&comm, 2, id, rank) != ncclSuccess) return 1;
          if (rank == 1) _exit(0);  // dies without a word
          std::vector<float> data(1 << 20, 1.0f);
          auto start = std::chrono::steady_clock::now();
          ncclResult_t result =
              ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat32, ncclSum, comm, nullptr);
          double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          if (result != ncclRemoteError) return 2;
          if (seconds > 15) return 3;
          // The failure sticks: the next call reports it instead of hanging.
          ncclResult_t again = ncclAllReduce(data.data(), data.data(), 4, ncclFloat32, ncclSum, comm, nullptr);
          if (again != ncclRemoteError) return 4;
          ncclResult_t async = ncclSuccess;
          ncclCommGetAsyncError(comm, &async);
          if (async != ncclRemoteError) return 5;
          ncclCommDestroy(comm);
          return 0;
        },
        60);
    EXPECT_EQ(describeFailures(outcomes), "") << transport;
  }
}

// A rank that waits on a survivor of a dead rank, not on the dead rank, learns at once from the
// survivor, with the cause, instead of at its own time-out: rank 2 dies, rank 1 fails its receive
// from rank 2, and rank 0's receive from rank 1 then fails quoting rank 1's error.
TEST(Timeout, ARankWaitingOnASurvivorOfTheDeadLearnsAtOnce) {
  auto* rank0Done = static_cast<std::atomic<int>*>(
      mmap(nullptr, sizeof(std::atomic<int>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(rank0Done, MAP_FAILED);
  for (const char* transport : {"shm", "tcp"}) {
    new (rank0Done) std::atomic<int>(0);
    auto outcomes = runRankProcesses(
        3,
        [&](int rank, const ncclUniqueId& id) {
          setenv("WEFT_TRANSPORT", transport, 1);
          setenv("WEFT_TIMEOUT", "30", 1);
          ncclComm_t comm;
          if (ncclCommInitRank(&comm, 3, id, rank) != ncclSuccess) return 1;
          std::vector<float> data(1024, 1.0f);
          // Connects every pair (a ring of three), so no later wait is a connection's set-up.
          if (ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess)
            return 2;
          if (rank == 2) _exit(0);  // dies without a word
          const int from = rank == 1 ? 2 : 1;
          auto start = std::chrono::steady_clock::now();
          ncclResult_t result = ncclRecv(data.data(), data.size(), ncclFloat32, from, comm, nullptr);
          double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          const std::string error = ncclGetLastError(comm);
          if (rank == 1) {  // stays alive, so that rank 0 sees its failure, not its death
            for (int i = 0; i < 2000 && rank0Done->load() == 0; ++i) usleep(10000);
          } else {
            rank0Done->store(1);
            std::fprintf(stderr, "%s, rank 0: %.3f s: %s\n", transport, seconds, error.c_str());
            if (error.find("rank 1") == std::string::npos || error.find("failed a call") == std::string::npos ||
                error.find("rank 2") == std::string::npos)
              return 5;
          }
          if (result != ncclRemoteError) return 3;
          if (seconds > 10) return 4;  // rank 0's would be WEFT_TIMEOUT (30 s) without word from rank 1
          ncclCommAbort(comm);
          return 0;
        },
        90);
    EXPECT_EQ(describeFailures(outcomes), "")
        << transport << ": 3 no ncclRemoteError, 4 too late, 5 the error does not quote rank 1's";
  }
  munmap(rank0Done, sizeof(std::atomic<int>));
}

// A stranger connects to the bootstrap port: one sends garbage, one says nothing, one offers a
// wrong secret. The root rejects them and the real ranks form their communicator. The strangers
// are a third process (this one must not start threads before forking the ranks), and the real
// ranks start only once the strangers are connected.
TEST(Intruder, RejectedWhileRealRanksCarryOn) {
  int strangersIn[2];
  ASSERT_EQ(pipe(strangersIn), 0);
  auto outcomes = runRankProcesses(
      3,
      [&](int rank, const ncclUniqueId& id) {
        if (rank == 2) {
          UniqueIdContents contents;
          if (decodeUniqueId(id, &contents) != ncclSuccess) return 10;
          Deadline deadline = Deadline::after(10);
          int garbage = -1, silent = -1, impostor = -1;
          if (connectSocket(contents.root, deadline, &garbage) != ncclSuccess) return 11;
          if (connectSocket(contents.root, deadline, &silent) != ncclSuccess) return 12;
          std::string junk(300, 'x');
          if (sendAll(garbage, junk.data(), junk.size(), deadline) != ncclSuccess) return 13;
          UniqueIdContents wrong = contents;
          wrong.secret.bytes[0] ^= 1;
          SocketAddress local;
          if (connectToRoot(wrong, 10, &impostor, &local) != ncclSuccess) return 14;
          if (write(strangersIn[1], "go", 2) != 2) return 15;  // one byte for each real rank
          RankInfo fake{};
          BootstrapResult ignored;
          const bool rejected = exchangeRankInfo(impostor, wrong, 2, fake, 10, &ignored) != ncclSuccess;
          close(garbage);
          close(silent);
          close(impostor);
          return rejected ? 0 : 16;
        }
        char go;
        if (read(strangersIn[0], &go, 1) != 1) return 4;
        ncclComm_t comm;
        if (ncclCommInitRank(&comm, 2, id, rank) != ncclSuccess) return 1;
        std::vector<int64_t> data(100);
        fillInput(data.data(), data.size(), rank, ncclInt64, ncclSum, 5);
        if (ncclAllReduce(data.data(), data.data(), data.size(), ncclInt64, ncclSum, comm, nullptr) != ncclSuccess)
          return 2;
        size_t wrong = countMismatches(data.data(), data.size(), 2, ncclInt64, ncclSum, 5, "intruder");
        ncclCommDestroy(comm);
        return wrong == 0 ? 0 : 3;
      },
      60);
  EXPECT_EQ(describeFailures(outcomes), "");
  close(strangersIn[0]);
  close(strangersIn[1]);
}

}  // namespace

namespace {

// Ranks that disagree on the count: an error that names the other rank, or a time-out error,
// on every rank; never a hang, never success.
TEST(Mismatch, DifferentCountsAreReportedNotCorrupted) {
  auto outcomes = runRankProcesses(
      2,
      [](int rank, const ncclUniqueId& id) {
        setenv("WEFT_TIMEOUT", "3", 1);
        ncclComm_t comm;
        if (ncclCommInitRank(&comm, 2, id, rank) != ncclSuccess) return 1;
        std::vector<float> data(4000, 1.0f);
        size_t count = rank == 0 ? 1000 : 3000;
        ncclResult_t result = ncclAllReduce(data.data(), data.data(), count, ncclFloat32, ncclSum, comm, nullptr);
        if (result == ncclSuccess) return 2;
        std::string message = ncclGetLastError(comm);
        bool explains = message.find("rank") != std::string::npos;
        ncclCommDestroy(comm);
        return explains ? 0 : 3;
      },
      60);
  EXPECT_EQ(describeFailures(outcomes), "");
}

// The same over TCP with slices large enough to be received in place (straight into the
// call's buffer): the disagreement is an error naming a rank, and nothing lands past the
// buffer the call was given.
TEST(Mismatch, DifferentCountsOverTcpInPlaceAreReportedWithinTheBuffer) {
  auto outcomes = runRankProcesses(
      2,
      [](int rank, const ncclUniqueId& id) {
        setenv("WEFT_TIMEOUT", "3", 1);
        setenv("WEFT_TRANSPORT", "tcp", 1);
        ncclComm_t comm;
        if (ncclCommInitRank(&comm, 2, id, rank) != ncclSuccess) return 1;
        const size_t count = rank == 0 ? 50000 : 70000;  // floats per rank: slices of 200 and 256 KiB
        constexpr float kGuard = -7.0f;
        std::vector<float> input(count, static_cast<float>(rank + 1)), output(2 * count + 1024, kGuard);
        ncclResult_t result = ncclAllGather(input.data(), output.data(), count, ncclFloat32, comm, nullptr);
        if (result == ncclSuccess) return 2;
        std::string message = ncclGetLastError(comm);
        bool explains = message.find("rank") != std::string::npos;
        for (size_t i = 2 * count; i < output.size(); ++i)
          if (output[i] != kGuard) return 4;
        ncclCommAbort(comm);
        return explains ? 0 : 3;
      },
      60);
  EXPECT_EQ(describeFailures(outcomes), "");
}

}  // namespace
