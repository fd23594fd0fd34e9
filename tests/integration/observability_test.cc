// What a stuck or finished job leaves behind: the rank whose call times out writes its
// recorded collectives (WEFT_DUMP_FILE), names the file in its error and adds what its peers
// say; WEFT_TRACE writes a span per collective, in call order, on each rank; `weft-info status`
// names the rank a stuck job waits on, or the dead one, within 2 s.
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "nccl.h"
#include "tests/support/multiprocess.h"

namespace weft {
namespace {

using testing::describeFailures;
using testing::runRankProcesses;

std::string readAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string tempDir() {
  char dir[] = "/tmp/weft_observability_XXXXXX";
  return mkdtemp(dir) ? dir : "";
}

// Runs `command`; its standard output in *output, how long it took in *seconds.
bool runCommand(const std::string& command, std::string* output, double* seconds) {
  const auto start = std::chrono::steady_clock::now();
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return false;
  char buffer[4096];
  size_t n;
  output->clear();
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) output->append(buffer, n);
  const int status = pclose(pipe);
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return status != -1;
}

// A communicator of `nranks` that has run three all-reduces of 4096 ones (#0 to #2) in *data:
// 0, or 1 when init failed, 2 when a call did.
int initAndAllReduceThrice(int rank, int nranks, const ncclUniqueId& id, ncclComm_t* comm, std::vector<float>* data) {
  if (ncclCommInitRank(comm, nranks, id, rank) != ncclSuccess) return 1;
  data->assign(4096, 1.0f);
  for (int k = 0; k < 3; ++k)
    if (ncclAllReduce(data->data(), data->data(), data->size(), ncclFloat32, ncclSum, *comm, nullptr) != ncclSuccess)
      return 2;
  return 0;
}

size_t countOf(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Observability, TimedOutRankDumpsItsRecordAndNamesTheFile) {
  const std::string dir = tempDir();
  ASSERT_FALSE(dir.empty());
  auto outcomes = runRankProcesses(
      2,
      [&](int rank, const ncclUniqueId& id) {
        setenv("WEFT_TIMEOUT", "2", 1);
        setenv("WEFT_DUMP_FILE", (dir + "/records.%h.r%r.txt").c_str(), 1);
        ncclComm_t comm;
        std::vector<float> data;
        if (const int failed = initAndAllReduceThrice(rank, 2, id, &comm, &data)) return failed;
        if (rank == 1) {
          sleep(6);  // alive, but never makes the fourth call
          ncclCommAbort(comm);
          return 0;
        }
        auto start = std::chrono::steady_clock::now();
        ncclResult_t result = ncclBroadcast(data.data(), data.data(), 100, ncclFloat32, 1, comm, nullptr);
        double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (result != ncclRemoteError || seconds > 5) return 3;
        const std::string error = ncclGetLastError(comm);
        char host[256] = {0};
        gethostname(host, sizeof host - 1);
        if (char* dot = std::strchr(host, '.')) *dot = 0;
        const std::string path = dir + "/records." + host + ".r0.txt";
        if (error.find("this rank's last collectives are in " + path) == std::string::npos) {
          std::fprintf(stderr, "error: %s\n", error.c_str());
          return 4;
        }
        // Its peer (alive, but elsewhere in its program) was asked, and is named.
        if (error.find("\nwhat its peers say:\n  rank 1 (host ") == std::string::npos ||
            error.find("): 3 issued") != std::string::npos ||  // not weft-info's line format
            error.find("\nculprit: rank 1 (host ") == std::string::npos ||
            error.find(") has not issued broadcast #3 (its last, #2, ended ") == std::string::npos) {
          std::fprintf(stderr, "error: %s\n", error.c_str());
          return 10;
        }
        const std::string dump = readAll(path);
        std::fprintf(stderr, "%s", dump.c_str());
        if (dump.find("# weft collective record: rank 0 of 2") != 0) return 5;
        if (countOf(dump, " allreduce 4096 x float sum, algorithm ") != 3 || countOf(dump, ": done in ") != 3) return 6;
        if (dump.find("#3 broadcast 100 x float root 1, algorithm ") == std::string::npos) return 7;
        // The failed call's line carries the time-out's own description of what it waited for.
        const size_t failedAt = dump.find(": failed after ");
        if (failedAt == std::string::npos || dump.find("rank 1") == std::string::npos) return 8;
        // Its duration covers the whole time-out: the record's clock (the time-stamp counter,
        // calibrated in this process) agrees with steady_clock's deadline.
        const double failedAfter = std::atof(dump.c_str() + failedAt + std::strlen(": failed after "));
        if (failedAfter < 1.99 || failedAfter > 4 ||
            dump.find(" s (rank 0: no progress", failedAt) == std::string::npos)
          return 9;
        ncclCommAbort(comm);
        unlink(path.c_str());
        return 0;
      },
      60);
  EXPECT_EQ(describeFailures(outcomes), "");
  rmdir(dir.c_str());
}

TEST(Observability, NoRecordNoDump) {
  auto outcomes = runRankProcesses(
      2,
      [&](int rank, const ncclUniqueId& id) {
        setenv("WEFT_TIMEOUT", "1", 1);
        setenv("WEFT_RECORD_ENTRIES", "0", 1);
        setenv("WEFT_DUMP_FILE", "/nonexistent/weft/never.txt", 1);
        ncclComm_t comm;
        if (ncclCommInitRank(&comm, 2, id, rank) != ncclSuccess) return 1;
        if (rank == 1) {
          sleep(3);
          ncclCommAbort(comm);
          return 0;
        }
        float x = 1;
        if (ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, comm, nullptr) != ncclRemoteError) return 2;
        if (std::string(ncclGetLastError(comm)).find("last collectives") != std::string::npos) return 3;
        ncclCommAbort(comm);
        return 0;
      },
      60);
  EXPECT_EQ(describeFailures(outcomes), "");
}

TEST(Observability, TraceHasOneSpanPerCollectiveInCallOrder) {
  const std::string dir = tempDir();
  ASSERT_FALSE(dir.empty());
  auto outcomes = runRankProcesses(
      2,
      [&](int rank, const ncclUniqueId& id) {
        const std::string path = dir + "/trace." + std::to_string(rank) + ".json";
        setenv("WEFT_TRACE", path.c_str(), 1);
        ncclComm_t comm;
        if (ncclCommInitRank(&comm, 2, id, rank) != ncclSuccess) return 1;
        std::vector<float> data(2048, 1.0f), gathered(4096);
        if (ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess ||
            ncclBroadcast(data.data(), data.data(), 10, ncclFloat32, 0, comm, nullptr) != ncclSuccess ||
            ncclAllGather(data.data(), gathered.data(), 2048, ncclFloat32, comm, nullptr) != ncclSuccess ||
            ncclAllReduce(data.data(), data.data(), 1, ncclFloat32, ncclMax, comm, nullptr) != ncclSuccess)
          return 2;
        if (ncclCommDestroy(comm) != ncclSuccess) return 3;
        const std::string trace = readAll(path);
        if (trace.rfind("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", 0) != 0 ||
            trace.find("\n]}\n") == std::string::npos)
          return 4;
        if (countOf(trace, "\"cat\":\"collective\",\"ph\":\"X\"") != 4) return 5;
        // Every step of every call has its span, on the track of its peer (a ring of two: rank 1-rank).
        if (countOf(trace, "\"cat\":\"step\",\"ph\":\"X\"") < 4 ||
            trace.find("\"name\":\"comm ") == std::string::npos ||
            trace.find(" ranks): steps with rank " + std::to_string(1 - rank) + "\"") == std::string::npos ||
            trace.find(",\"unfinished\":true") != std::string::npos)
          return 11;
        const size_t a = trace.find("{\"name\":\"allreduce\""), b = trace.find("{\"name\":\"broadcast\""),
                     c = trace.find("{\"name\":\"allgather\""), d = trace.find("{\"name\":\"allreduce\"", a + 1);
        if (!(a < b && b < c && c < d && d != std::string::npos)) return 6;
        if (trace.find("\"pid\":" + std::to_string(rank) + ",") == std::string::npos) return 7;
        if (trace.find("\"args\":{\"name\":\"rank " + std::to_string(rank) + " (") == std::string::npos) return 8;
        if (trace.find("\"sequence\":0,\"count\":2048,\"datatype\":\"float\",\"algorithm\":") == std::string::npos)
          return 9;
        if (trace.find("\"op\":\"max\"") == std::string::npos) return 10;
        unlink(path.c_str());
        return 0;
      },
      60);
  EXPECT_EQ(describeFailures(outcomes), "");
  rmdir(dir.c_str());
}

TEST(Observability, MetricsFileCountsEachCollectiveBySize) {
  const std::string dir = tempDir();
  ASSERT_FALSE(dir.empty());
  auto outcomes = runRankProcesses(
      2,
      [&](int rank, const ncclUniqueId& id) {
        setenv("WEFT_METRICS_FILE", (dir + "/weft.%r.%c.prom").c_str(), 1);
        setenv("WEFT_METRICS_INTERVAL", "3600", 1);  // written at destroy
        ncclComm_t comm;
        if (ncclCommInitRank(&comm, 2, id, rank) != ncclSuccess) return 1;
        std::vector<float> data(4096, 1.0f);
        for (int k = 0; k < 5; ++k)
          if (ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess)
            return 2;
        for (int k = 0; k < 2; ++k)
          if (ncclBroadcast(data.data(), data.data(), 100, ncclFloat32, 0, comm, nullptr) != ncclSuccess) return 3;
        if (ncclCommDestroy(comm) != ncclSuccess) return 4;
        // The one file of this rank (the communicator's id is in its name).
        std::string path;
        const std::string prefix = "weft." + std::to_string(rank) + ".";
        if (DIR* d = opendir(dir.c_str())) {
          while (const dirent* entry = readdir(d))
            if (std::string(entry->d_name).rfind(prefix, 0) == 0) path = dir + "/" + entry->d_name;
          closedir(d);
        }
        if (path.empty()) return 5;
        const std::string text = readAll(path);
        const std::string labels = ",rank=\"" + std::to_string(rank) + "\",nranks=\"2\",collective=";
        if (text.find(labels + "\"allreduce\",le=\"16384\"} 5\n") == std::string::npos ||
            text.find(labels + "\"broadcast\",le=\"512\"} 2\n") == std::string::npos ||
            text.find("weft_collective_bytes_total{") == std::string::npos ||
            text.find(labels + "\"allreduce\",le=\"16384\"} 81920\n") == std::string::npos) {
          std::fprintf(stderr, "rank %d %s:\n%s", rank, path.c_str(), text.c_str());
          return 6;
        }
        unlink(path.c_str());
        return 0;
      },
      60);
  EXPECT_EQ(describeFailures(outcomes), "");
  rmdir(dir.c_str());
}

// The test: rank 2 sleeps before the fourth all-reduce; while it sleeps, weft-info
// status (asked with rank 2's pid: the job's other processes are found through it) names it
// and the collective the others wait in, within 2 s.
TEST(Observability, StatusNamesTheRankTheOthersWaitFor) {
  auto outcomes = runRankProcesses(
      4,
      [&](int rank, const ncclUniqueId& id) {
        setenv("WEFT_TIMEOUT", "60", 1);
        ncclComm_t comm;
        std::vector<float> data;
        if (const int failed = initAndAllReduceThrice(rank, 4, id, &comm, &data)) return failed;
        if (rank == 2) {
          usleep(1500 * 1000);  // the others are in all-reduce #3 for longer than a second
          const std::string base = std::string(WEFT_INFO_PATH) + " status " + std::to_string(getpid());
          std::string text, json;
          double seconds = 0, jsonSeconds = 0;
          if (!runCommand(base, &text, &seconds) || !runCommand(base + " --json", &json, &jsonSeconds)) return 3;
          std::fprintf(stderr, "weft-info status (%.3f s):\n%s\n--json (%.3f s): %s\n", seconds, text.c_str(),
                       jsonSeconds, json.c_str());
          if (seconds > 2 || jsonSeconds > 2) return 4;
          const std::string culprit = "rank 2 (host ";
          if (text.find("  culprit: " + culprit) == std::string::npos ||
              text.find("pid " + std::to_string(getpid()) + ") has not issued allreduce #3 (its last, #2, ended ") ==
                  std::string::npos)
            return 5;
          for (int r = 0; r < 4; ++r)
            if (text.find("  rank " + std::to_string(r) + " (host ") == std::string::npos) return 6;
          // The three others are in #3; at least the rank after 2 on the ring waits on it.
          if (countOf(text, "; in allreduce #3 for ") != 3 || text.find("waited on rank 2 for ") == std::string::npos)
            return 7;
          if (json.find("\"culprit\": \"" + culprit) == std::string::npos || countOf(json, "\"answered\": true") != 4 ||
              json.find("\"in_flight\": {\"sequence\": 3, ") == std::string::npos)
            return 8;
        }
        if (ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess)
          return 9;
        if (data[0] != 256.0f || data[4095] != 256.0f) return 10;  // 4^4: the stuck call finished right
        return ncclCommDestroy(comm) == ncclSuccess ? 0 : 11;
      },
      60);
  EXPECT_EQ(describeFailures(outcomes), "");
}

// The same with rank 2 killed: it is named dead, not waited for.
TEST(Observability, StatusNamesADeadRank) {
  auto outcomes = runRankProcesses(
      4,
      [&](int rank, const ncclUniqueId& id) {
        setenv("WEFT_TIMEOUT", "30", 1);
        ncclComm_t comm;
        std::vector<float> data;
        if (const int failed = initAndAllReduceThrice(rank, 4, id, &comm, &data)) return failed;
        if (rank == 2) raise(SIGKILL);
        // The survivors learn of the death from their transports (or from a peer that did).
        if (ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat32, ncclSum, comm, nullptr) == ncclSuccess)
          return 3;
        if (rank == 0) {
          std::string text;
          double seconds = 0;
          if (!runCommand(std::string(WEFT_INFO_PATH) + " status " + std::to_string(getpid()), &text, &seconds))
            return 4;
          std::fprintf(stderr, "weft-info status (%.3f s):\n%s\n", seconds, text.c_str());
          if (seconds > 2) return 5;
          if (text.find("  culprit: rank 2 (host ") == std::string::npos ||
              text.find(") is dead (its process is gone)") == std::string::npos ||
              text.find("  rank 2 (host ") == std::string::npos ||
              text.find("dead: its process is gone") == std::string::npos)
            return 6;
        } else {
          sleep(3);  // alive while rank 0 asks
        }
        ncclCommAbort(comm);
        return 0;
      },
      60);
  ASSERT_EQ(outcomes.size(), 4u);
  for (int r : {0, 1, 3}) EXPECT_EQ(outcomes[r].exitCode, 0) << "rank " << r;
  EXPECT_EQ(outcomes[2].exitCode, 128 + SIGKILL);
}

// WEFT_DUMP_SIGNAL: a signal makes the rank dump its record as it waits (here: in an
// all-reduce its peer has not joined yet), without stopping it; the peer, not signalled,
// writes nothing.
TEST(Observability, DumpSignalWritesTheRecordWhileTheRankWaits) {
  const std::string dir = tempDir();
  ASSERT_FALSE(dir.empty());
  auto outcomes = runRankProcesses(
      2,
      [&](int rank, const ncclUniqueId& id) {
        setenv("WEFT_DUMP_SIGNAL", "SIGUSR2", 1);
        setenv("WEFT_DUMP_FILE", (dir + "/signal.r%r.txt").c_str(), 1);
        setenv("WEFT_TIMEOUT", "30", 1);
        ncclComm_t comm;
        if (ncclCommInitRank(&comm, 2, id, rank) != ncclSuccess) return 1;
        std::vector<float> data(1024, 1.0f);
        for (int k = 0; k < 2; ++k)
          if (ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess)
            return 2;
        const std::string peerDump = dir + "/signal.r1.txt";
        if (rank == 1) {
          if (raise(SIGUSR2) != 0) return 3;  // handled: the process goes on
        } else {
          bool written = false;  // rank 1 is inside all-reduce #2, waiting for this rank
          for (int i = 0; i < 300 && !written; ++i) {
            written = access(peerDump.c_str(), F_OK) == 0;
            usleep(10 * 1000);
          }
          if (!written) return 4;
        }
        if (ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess)
          return 5;
        if (data[0] != 8.0f) return 6;
        if (rank == 1) {
          const std::string dump = readAll(peerDump);
          if (dump.find("# weft collective record: rank 1 of 2") != 0 ||
              dump.find("\n#1 allreduce 1024 x float") == std::string::npos) {
            std::fprintf(stderr, "%s", dump.c_str());
            return 7;
          }
          unlink(peerDump.c_str());
        } else if (access((dir + "/signal.r0.txt").c_str(), F_OK) == 0) {
          return 8;
        }
        return ncclCommDestroy(comm) == ncclSuccess ? 0 : 9;
      },
      60);
  EXPECT_EQ(describeFailures(outcomes), "");
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace weft
