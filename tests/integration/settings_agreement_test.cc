// Settings that shape schedules or messages (the ranksMustAgree rows of common/settings_table.cc)
// set differently on one rank: communicator init fails on every rank within seconds, with
// ncclInvalidArgument and a message naming the variable, each value and its ranks; the same
// values on every rank give correct results. Machine models that differ between hosts (other
// NICs) are not an error: every rank prices with the slowest terms and the results are right.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "nccl.h"
#include "tests/support/multiprocess.h"
#include "tests/support/reference.h"

using namespace weft::testing;

namespace {

constexpr int kRanks = 4;
constexpr int kOddRank = 1;
constexpr double kInitSeconds = 8;  // a failed init must be this quick; WEFT_TIMEOUT is longer

std::string writeTempFile(const std::string& text) {
  char path[] = "/tmp/weft-settings-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return "";
  const ssize_t written = write(fd, text.data(), text.size());
  close(fd);
  return written == static_cast<ssize_t>(text.size()) ? path : "";
}

// All-reduce, all-gather and a large all-reduce on several channels' worth of data, each
// against the independent reference; 0 when every element is right.
int runCollectives(ncclComm_t comm, int rank, int nranks) {
  size_t wrong = 0;
  unsigned seed = 900;
  for (size_t count : {size_t(7), size_t(1003), size_t(300007)}) {
    std::vector<float> send(count), recv(count);
    fillInput(send.data(), count, rank, ncclFloat32, ncclSum, ++seed);
    if (ncclAllReduce(send.data(), recv.data(), count, ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess) {
      fprintf(stderr, "rank %d all-reduce of %zu: %s\n", rank, count, ncclGetLastError(comm));
      return 10;
    }
    wrong += countMismatches(recv.data(), count, nranks, ncclFloat32, ncclSum, seed, "all-reduce");
  }
  const size_t block = 50001;
  std::vector<int32_t> mine(block), all(block * nranks);
  for (size_t i = 0; i < block; ++i) mine[i] = static_cast<int32_t>(rank * 1000003 + i);
  if (ncclAllGather(mine.data(), all.data(), block, ncclInt32, comm, nullptr) != ncclSuccess) {
    fprintf(stderr, "rank %d all-gather: %s\n", rank, ncclGetLastError(comm));
    return 11;
  }
  for (int r = 0; r < nranks; ++r)
    for (size_t i = 0; i < block; ++i) wrong += all[r * block + i] != static_cast<int32_t>(r * 1000003 + i);
  return wrong == 0 ? 0 : 12;
}

struct Difference {
  const char* variable;
  const char* usual;  // on every rank but kOddRank; nullptr: unset
  const char* odd;    // on kOddRank
  const char* expected;
  const char* transport = nullptr;  // WEFT_TRANSPORT on every rank, when the setting needs it
};

void PrintTo(const Difference& d, std::ostream* out) {
  *out << d.variable << "=" << (d.usual ? d.usual : "(unset)") << "/" << d.odd;
}

class OneRankDiffers : public ::testing::TestWithParam<Difference> {};

void setOrUnset(const char* variable, const char* value) {
  if (value)
    setenv(variable, value, 1);
  else
    unsetenv(variable);
}

TEST_P(OneRankDiffers, FailsInitOnEveryRankNamingVariableAndRanks) {
  const Difference d = GetParam();
  auto outcomes = runRankProcesses(
      kRanks,
      [&](int rank, const ncclUniqueId& id) {
        setenv("WEFT_TIMEOUT", "20", 1);
        if (d.transport) setenv("WEFT_TRANSPORT", d.transport, 1);
        setOrUnset(d.variable, rank == kOddRank ? d.odd : d.usual);
        const auto start = std::chrono::steady_clock::now();
        ncclComm_t comm = nullptr;
        const ncclResult_t result = ncclCommInitRank(&comm, kRanks, id, rank);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const std::string message = ncclGetLastError(nullptr);
        if (result == ncclSuccess) {
          fprintf(stderr, "rank %d: init succeeded with %s differing\n", rank, d.variable);
          ncclCommDestroy(comm);
          return 1;
        }
        if (result != ncclInvalidArgument) return 2;
        if (seconds > kInitSeconds) return 3;
        if (message.find(d.expected) == std::string::npos) {
          fprintf(stderr, "rank %d: '%s' lacks '%s'\n", rank, message.c_str(), d.expected);
          return 4;
        }
        return 0;
      },
      40);
  EXPECT_EQ(describeFailures(outcomes), "") << d.variable;
}

TEST_P(OneRankDiffers, SameValueOnEveryRankGivesCorrectResults) {
  const Difference d = GetParam();
  auto outcomes = runRankProcesses(
      kRanks,
      [&](int rank, const ncclUniqueId& id) {
        setenv("WEFT_TIMEOUT", "20", 1);
        if (d.transport) setenv("WEFT_TRANSPORT", d.transport, 1);
        setOrUnset(d.variable, d.odd);
        ncclComm_t comm = nullptr;
        if (ncclCommInitRank(&comm, kRanks, id, rank) != ncclSuccess) {
          fprintf(stderr, "rank %d: %s\n", rank, ncclGetLastError(nullptr));
          return 1;
        }
        const int wrong = runCollectives(comm, rank, kRanks);
        ncclCommDestroy(comm);
        return wrong;
      },
      90);
  EXPECT_EQ(describeFailures(outcomes), "") << d.variable << "=" << d.odd;
}

INSTANTIATE_TEST_SUITE_P(
    Settings, OneRankDiffers,
    ::testing::Values(
        Difference{"WEFT_SHM_SLOT_BYTES", nullptr, "4096",
                   "WEFT_SHM_SLOT_BYTES differs between ranks: 524288 on ranks 0,2,3; 4096 on rank 1", "shm"},
        Difference{"WEFT_SLICE_BYTES", "262144", "8192",
                   "WEFT_SLICE_BYTES differs between ranks: 262144 on ranks 0,2,3; 8192 on rank 1"},
        Difference{"WEFT_TCP_SLOT_BYTES", nullptr, "4096",
                   "WEFT_TCP_SLOT_BYTES differs between ranks: 524288 on ranks 0,2,3; 4096 on rank 1", "tcp"},
        Difference{"WEFT_SHM_SLOTS", "8", "2", "WEFT_SHM_SLOTS differs between ranks: 8 on ranks 0,2,3; 2 on rank 1"},
        Difference{"WEFT_TCP_SLOTS", nullptr, "3",
                   "WEFT_TCP_SLOTS differs between ranks: 8 on ranks 0,2,3; 3 on rank 1", "tcp"},
        Difference{"NCCL_ALGO", nullptr, "Tree",
                   "NCCL_ALGO differs between ranks: unset on ranks 0,2,3; Tree on rank 1"},
        Difference{"WEFT_ALGO", "ring", "rhd", "WEFT_ALGO differs between ranks: ring on ranks 0,2,3; rhd on rank 1"},
        Difference{"NCCL_MIN_NCHANNELS", nullptr, "4",
                   "NCCL_MIN_NCHANNELS differs between ranks: unset on ranks 0,2,3; 4 on rank 1"},
        Difference{"NCCL_MAX_NCHANNELS", "8", "2",
                   "NCCL_MAX_NCHANNELS differs between ranks: 8 on ranks 0,2,3; 2 on rank 1"},
        Difference{"WEFT_TRANSPORT", "shm", "tcp",
                   "WEFT_TRANSPORT differs between ranks: shm on ranks 0,2,3; tcp on rank 1"},
        Difference{"WEFT_ENCRYPTION", nullptr, "tls",
                   "WEFT_ENCRYPTION differs between ranks: none on ranks 0,2,3; tls on rank 1", "tcp"},
        Difference{"NCCL_SHM_DISABLE", "0", "1",
                   "NCCL_SHM_DISABLE differs between ranks: 0 on ranks 0,2,3; 1 on rank 1"},
        Difference{"WEFT_DIRECT", nullptr, "0", "WEFT_DIRECT differs between ranks: 1 on ranks 0,2,3; 0 on rank 1"},
        Difference{"WEFT_DIRECT_MIN_BYTES", nullptr, "4096",
                   "WEFT_DIRECT_MIN_BYTES differs between ranks: 1048576 on ranks 0,2,3; 4096 on rank 1"},
        Difference{"WEFT_ONE_SHOT_MAX_BYTES", nullptr, "0",
                   "WEFT_ONE_SHOT_MAX_BYTES differs between ranks: 4096 on ranks 0,2,3; 0 on rank 1"},
        // Compression only above 1 GiB, so that results stay exact; shown cut short.
        Difference{"WEFT_COMPRESSION", nullptr, "int8,min_bytes=1073741824",
                   "WEFT_COMPRESSION differs between ranks: unset on ranks 0,2,3; int8,min_bytes=10737... on rank 1"}),
    [](const ::testing::TestParamInfo<Difference>& info) { return std::string(info.param.variable); });

// The tuning file: only rank 0 reads it, and every rank prices with rank 0's measured terms
// (sent in its bootstrap record). Here rank 0's file makes shared memory ten times faster than
// the default: a 1 MiB all-reduce on 4 ranks then runs rhd rather than ring (weft-info plan
// allreduce 1048576 --ranks 4, with and without the file) on every rank, though no other rank
// has the file, and a different file on rank 1 is not read.
TEST(TuningFile, RankZerosFileIsUsedByEveryRank) {
  const std::string fast = writeTempFile("link Memory bandwidth_GBps 1000\n");
  const std::string odd = writeTempFile("link Memory latency_us 90 bandwidth_GBps 0.01\nnics_per_node 4\n");
  ASSERT_FALSE(fast.empty() || odd.empty());
  auto outcomes = runRankProcesses(
      kRanks,
      [&](int rank, const ncclUniqueId& id) {
        setenv("WEFT_TIMEOUT", "20", 1);
        setenv("WEFT_DIRECT", "0", 1);
        if (rank == 0) setenv("WEFT_TUNING_FILE", fast.c_str(), 1);
        if (rank == kOddRank) setenv("WEFT_TUNING_FILE", odd.c_str(), 1);
        const std::string log = fast + ".log." + std::to_string(rank);
        setenv("NCCL_DEBUG", "INFO", 1);
        setenv("NCCL_DEBUG_SUBSYS", "TUNING", 1);
        setenv("NCCL_DEBUG_FILE", log.c_str(), 1);
        ncclResetDebugInit();
        ncclComm_t comm = nullptr;
        if (ncclCommInitRank(&comm, kRanks, id, rank) != ncclSuccess) return 1;
        std::vector<float> data(262144, static_cast<float>(rank + 1));
        if (ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess)
          return 2;
        for (float v : data)
          if (v != 10.0f) return 3;  // 1 + 2 + 3 + 4
        ncclCommDestroy(comm);
        std::ifstream in(log);
        std::stringstream text;
        text << in.rdbuf();
        unlink(log.c_str());
        if (text.str().find("allreduce: 262144 x float op sum root -1 -> algorithm rhd") == std::string::npos) {
          fprintf(stderr, "rank %d log:\n%s", rank, text.str().c_str());
          return 4;
        }
        return 0;
      },
      90);
  unlink(fast.c_str());
  unlink(odd.c_str());
  EXPECT_EQ(describeFailures(outcomes), "");
}

// A tuning file rank 0 cannot use fails every rank at init, naming it; none waits for rank 0.
TEST(TuningFile, RankZerosBadFileFailsEveryRank) {
  const std::string bad = writeTempFile("link Memory bandwidth_GBps fast\n");
  ASSERT_FALSE(bad.empty());
  auto outcomes = runRankProcesses(
      kRanks,
      [&](int rank, const ncclUniqueId& id) {
        setenv("WEFT_TIMEOUT", "20", 1);
        setenv("WEFT_TUNING_FILE", bad.c_str(), 1);  // read on rank 0 only
        const auto start = std::chrono::steady_clock::now();
        ncclComm_t comm = nullptr;
        const ncclResult_t result = ncclCommInitRank(&comm, kRanks, id, rank);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const std::string message = ncclGetLastError(nullptr);
        if (result == ncclSuccess) ncclCommDestroy(comm);
        if (result != ncclInvalidArgument) return 1;
        if (seconds > kInitSeconds) return 2;
        const std::string expected =
            rank == 0 ? bad + ":1: 'fast' is not a positive number" : "rank 0's WEFT_TUNING_FILE could not be used";
        if (message.find(expected) == std::string::npos) {
          fprintf(stderr, "rank %d: '%s'\n", rank, message.c_str());
          return 3;
        }
        return 0;
      },
      40);
  unlink(bad.c_str());
  EXPECT_EQ(describeFailures(outcomes), "");
}

TEST(TuningFile, SameContentAtDifferentPathsGivesCorrectResults) {
  const char* text = "link Memory latency_us 0.5 bandwidth_GBps 20\nnics_per_node 2\n";
  std::vector<std::string> paths;
  for (int r = 0; r < kRanks; ++r) paths.push_back(writeTempFile(text));
  auto outcomes = runRankProcesses(
      kRanks,
      [&](int rank, const ncclUniqueId& id) {
        setenv("WEFT_TIMEOUT", "20", 1);
        setenv("WEFT_TUNING_FILE", paths[rank].c_str(), 1);
        ncclComm_t comm = nullptr;
        if (ncclCommInitRank(&comm, kRanks, id, rank) != ncclSuccess) return 1;
        const int wrong = runCollectives(comm, rank, kRanks);
        ncclCommDestroy(comm);
        return wrong;
      },
      90);
  for (const std::string& path : paths) unlink(path.c_str());
  EXPECT_EQ(describeFailures(outcomes), "");
}

// An invalid value on one rank only is a value that differs: every rank fails, none waits for
// the rank that rejected it (an algorithm name checked at init, a number checked at creation).
TEST(InvalidValueOnOneRank, FailsEveryRank) {
  const char* const cases[][3] = {
      {"WEFT_ALGO", "spiral", "WEFT_ALGO differs between ranks: unset on ranks 0,2,3; spiral on rank 1"},
      {"WEFT_SHM_SLOT_BYTES", "100",
       "WEFT_SHM_SLOT_BYTES differs between ranks: 524288 on ranks 0,2,3; invalid 100 on rank 1"}};
  for (const auto& c : cases) {
    auto outcomes = runRankProcesses(
        kRanks,
        [&](int rank, const ncclUniqueId& id) {
          setenv("WEFT_TIMEOUT", "20", 1);
          if (rank == kOddRank) setenv(c[0], c[1], 1);
          const auto start = std::chrono::steady_clock::now();
          ncclComm_t comm = nullptr;
          const ncclResult_t result = ncclCommInitRank(&comm, kRanks, id, rank);
          const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          if (result == ncclSuccess) ncclCommDestroy(comm);
          if (result != ncclInvalidArgument) return 1;
          if (seconds > kInitSeconds) return 2;
          const std::string message = ncclGetLastError(nullptr);
          if (message.find(c[2]) != std::string::npos) return 0;
          fprintf(stderr, "rank %d: '%s'\n", rank, message.c_str());
          return 3;
        },
        40);
    EXPECT_EQ(describeFailures(outcomes), "") << c[0] << "=" << c[1];
  }
}

// Hosts whose machine models differ (here 8 NICs on one host, 1 on the other) used to build
// rings on different channel counts; now every rank prices with the slowest terms.
TEST(MachineModels, DifferentNicsPerHostGiveCorrectResults) {
  auto outcomes = runRankProcesses(
      kRanks,
      [&](int rank, const ncclUniqueId& id) {
        setenv("WEFT_TIMEOUT", "20", 1);
        const bool first = rank < kRanks / 2;
        setenv("WEFT_HOSTNAME", first ? "nodeA" : "nodeB", 1);
        setenv("WEFT_TOPO_FILE", first ? WEFT_TOPO_FIXTURE_DIR "/dgx_h100.xml" : WEFT_TOPO_FIXTURE_DIR "/cloud_vm.xml",
               1);
        ncclComm_t comm = nullptr;
        if (ncclCommInitRank(&comm, kRanks, id, rank) != ncclSuccess) {
          fprintf(stderr, "rank %d: %s\n", rank, ncclGetLastError(nullptr));
          return 1;
        }
        const int wrong = runCollectives(comm, rank, kRanks);
        ncclCommDestroy(comm);
        return wrong;
      },
      90);
  EXPECT_EQ(describeFailures(outcomes), "");
}

// Calls read the values agreed at init: a setenv on one rank afterwards changes neither the
// communicator's schedules (its calls stay correct) nor hides from a derived communicator,
// whose init compares the values again and fails on every member.
TEST(DerivedCommunicators, SetenvOnOneRankAfterInit) {
  auto outcomes = runRankProcesses(
      kRanks,
      [&](int rank, const ncclUniqueId& id) {
        setenv("WEFT_TIMEOUT", "20", 1);
        ncclComm_t comm = nullptr;
        if (ncclCommInitRank(&comm, kRanks, id, rank) != ncclSuccess) return 1;
        if (rank == kOddRank) {
          setenv("WEFT_ALGO", "tree", 1);
          setenv("NCCL_MIN_NCHANNELS", "4", 1);
        }
        if (int wrong = runCollectives(comm, rank, kRanks)) return wrong;
        ncclComm_t child = nullptr;
        const ncclResult_t split = ncclCommSplit(comm, 0, rank, &child, nullptr);
        const std::string message = ncclGetLastError(nullptr);
        if (split == ncclSuccess) ncclCommDestroy(child);
        if (split != ncclInvalidArgument) return 2;
        if (message.find("WEFT_ALGO differs between ranks: unset on ranks 0,2,3; tree on rank 1") ==
                std::string::npos ||
            message.find("also differs: NCCL_MIN_NCHANNELS") == std::string::npos) {
          fprintf(stderr, "rank %d: '%s'\n", rank, message.c_str());
          return 3;
        }
        // The parent is untouched by its child's failure.
        if (int wrong = runCollectives(comm, rank, kRanks)) return 4 + wrong;
        ncclCommDestroy(comm);
        return 0;
      },
      90);
  EXPECT_EQ(describeFailures(outcomes), "");
}

}  // namespace
