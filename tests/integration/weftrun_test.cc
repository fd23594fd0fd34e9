// weftrun end to end: output tagging, environment, fail-fast, signals, usage errors.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace {

const std::string kWeftrun = WEFTRUN_PATH;
const std::string kHelper = HELPER_PATH;

struct RunResult {
  int exitCode = -1;  // exit status, or 128+signal
  std::string out, err;
  double seconds = 0;
};

std::string readFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> v;
  std::stringstream s(text);
  std::string l;
  while (std::getline(s, l)) v.push_back(l);
  return v;
}

class Process {
 public:
  // Starts args with stdout/stderr to temporary files.
  explicit Process(const std::vector<std::string>& args) {
    char dir[] = "/tmp/weftrun_test_XXXXXX";
    dir_ = mkdtemp(dir);
    outPath_ = dir_ + "/out";
    errPath_ = dir_ + "/err";
    start_ = std::chrono::steady_clock::now();
    pid_ = fork();
    if (pid_ == 0) {
      int o = open(outPath_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int e = open(errPath_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(o, 1);
      dup2(e, 2);
      std::vector<char*> argv;
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(126);
    }
  }
  ~Process() {
    if (pid_ > 0 && !done_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    unlink(outPath_.c_str());
    unlink(errPath_.c_str());
    rmdir(dir_.c_str());
  }
  pid_t pid() const { return pid_; }
  std::string out() const { return readFile(outPath_); }

  // Waits up to timeoutSec; on time-out kills the launcher and reports exitCode -1.
  RunResult wait(double timeoutSec = 30) {
    RunResult r;
    auto deadline = start_ + std::chrono::duration<double>(timeoutSec);
    int st = 0;
    for (;;) {
      pid_t p = waitpid(pid_, &st, WNOHANG);
      if (p == pid_) {
        done_ = true;
        r.exitCode = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        break;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        done_ = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    r.out = readFile(outPath_);
    r.err = readFile(errPath_);
    return r;
  }

 private:
  pid_t pid_ = -1;
  bool done_ = false;
  std::string dir_, outPath_, errPath_;
  std::chrono::steady_clock::time_point start_;
};

RunResult runWeftrun(std::vector<std::string> args, double timeoutSec = 30) {
  args.insert(args.begin(), kWeftrun);
  Process p(args);
  return p.wait(timeoutSec);
}

TEST(Weftrun, PrefixesEveryLineOfThreeRanksWithoutInterleaving) {
  const int kLines = 200, kLen = 300;
  RunResult r = runWeftrun({"-n", "3", "--", kHelper, "print", std::to_string(kLines), std::to_string(kLen)});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  for (const auto& [text, stream] : {std::pair{r.out, "stdout"}, std::pair{r.err, "stderr"}}) {
    const std::regex lineRe("\\[(\\d+)\\] rank (\\d+) line (\\d+) (x*)");
    const std::regex tailRe(std::string("\\[(\\d+)\\] rank (\\d+) ") +
                            (stream == std::string("stdout") ? "tail" : "errtail"));
    std::map<int, int> nextLine;
    std::set<int> tails;
    for (const std::string& l : lines(text)) {
      std::smatch m;
      if (std::regex_match(l, m, lineRe)) {
        int tag = std::stoi(m[1]), rank = std::stoi(m[2]), idx = std::stoi(m[3]);
        EXPECT_EQ(tag, rank) << stream << ": " << l;
        EXPECT_EQ(m[4].length(), kLen) << stream << ": line cut or merged: " << l;
        EXPECT_EQ(idx, nextLine[rank]) << stream << ": out of order: " << l;
        nextLine[rank] = idx + 1;
      } else if (std::regex_match(l, m, tailRe)) {
        EXPECT_EQ(m[1], m[2]);
        tails.insert(std::stoi(m[1]));
      } else {
        ADD_FAILURE() << stream << ": unexpected line: '" << l << "'";
      }
    }
    for (int rank = 0; rank < 3; ++rank) EXPECT_EQ(nextLine[rank], kLines) << stream << " rank " << rank;
    EXPECT_EQ(tails, (std::set<int>{0, 1, 2})) << stream << ": partial final lines must be flushed";
  }
}

TEST(Weftrun, NoPrefixKeepsLinesWhole) {
  RunResult r = runWeftrun({"-n", "2", "--no-prefix", kHelper, "print", "20", "50"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const std::regex lineRe("rank (\\d) line (\\d+) x{50}|rank \\d tail");
  for (const std::string& l : lines(r.out)) EXPECT_TRUE(std::regex_match(l, lineRe)) << l;
  EXPECT_EQ(lines(r.out).size(), 42u);
}

TEST(Weftrun, SetsTheLaunchEnvironmentForEachRank) {
  setenv("WEFTRUN_TEST_INHERITED", "kept", 1);
  setenv("RANK", "99", 1);  // an inherited RANK must be replaced
  RunResult r = runWeftrun({"-n", "4", kHelper, "env"});
  RunResult again = runWeftrun({"-n", "4", kHelper, "env"});
  unsetenv("RANK");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const std::regex envRe(
      "\\[(\\d)\\] RANK=(\\d) WORLD_SIZE=4 LOCAL_RANK=(\\d) LOCAL_WORLD_SIZE=4 MASTER_ADDR=127\\.0\\.0\\.1 "
      "MASTER_PORT=(\\d+) WEFT_SECRET=([0-9a-f]{32}) WEFTRUN_TEST_INHERITED=kept");
  std::set<int> ranks;
  std::set<std::string> ports, secrets;
  for (const std::string& l : lines(r.out)) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(l, m, envRe)) << l;
    EXPECT_EQ(m[1], m[2]);
    EXPECT_EQ(m[2], m[3]);
    int port = std::stoi(m[4]);
    EXPECT_GT(port, 0);
    EXPECT_LT(port, 65536);
    ranks.insert(std::stoi(m[2]));
    ports.insert(m[4]);
    secrets.insert(m[5]);
  }
  EXPECT_EQ(ranks, (std::set<int>{0, 1, 2, 3}));
  EXPECT_EQ(ports.size(), 1u) << "all ranks share one rendezvous port";
  ASSERT_EQ(secrets.size(), 1u) << "all ranks share one secret";
  const std::regex secretRe("WEFT_SECRET=([0-9a-f]{32})");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(again.out, m, secretRe));
  EXPECT_NE(m[1], *secrets.begin()) << "each job gets a fresh secret";
}

// rank -> the CPUs it printed ("rank R cpus C1,C2,..." lines of the helper's cpus mode).
std::map<int, std::set<int>> cpusOfRanks(const std::string& out) {
  std::map<int, std::set<int>> cpus;
  const std::regex lineRe("(?:\\[\\d+\\] )?rank (\\d+) cpus ([0-9,]+)");
  for (const std::string& l : lines(out)) {
    std::smatch m;
    if (!std::regex_match(l, m, lineRe)) continue;
    std::stringstream list(m[2]);
    for (std::string cpu; std::getline(list, cpu, ',');) cpus[std::stoi(m[1])].insert(std::stoi(cpu));
  }
  return cpus;
}

std::set<int> cpusOfThisProcess() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::set<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &set)) cpus.insert(cpu);
  return cpus;
}

// By default each rank runs on its own cores, disjoint from the others' and among those weftrun
// may use; with more ranks than CPUs, or --bind-to none, every rank may use all of them.
TEST(Weftrun, BindsEachRankToItsOwnCoresUnlessTheyOutnumberThem) {
  const std::set<int> mine = cpusOfThisProcess();
  if (mine.size() < 2) GTEST_SKIP() << "skipped: this process may use " << mine.size() << " CPU";
  RunResult r = runWeftrun({"-n", "2", kHelper, "cpus"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::map<int, std::set<int>> cpus = cpusOfRanks(r.out);
  ASSERT_EQ(cpus.size(), 2u) << r.out;
  for (const auto& [rank, set] : cpus) {
    EXPECT_FALSE(set.empty()) << "rank " << rank;
    for (int cpu : set) EXPECT_TRUE(mine.count(cpu)) << "rank " << rank << " cpu " << cpu;
    for (int cpu : set) EXPECT_FALSE(cpus[1 - rank].count(cpu)) << "ranks share cpu " << cpu;
  }
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"-n", "2", "--bind-to", "none", kHelper, "cpus"},
        std::vector<std::string>{"-n", std::to_string(mine.size() + 1), kHelper, "cpus"}}) {
    r = runWeftrun(args);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    cpus = cpusOfRanks(r.out);
    EXPECT_EQ(cpus.size(), static_cast<size_t>(std::stoi(args[1]))) << r.out;
    for (const auto& [rank, set] : cpus) EXPECT_EQ(set, mine) << "rank " << rank;
  }
  r = runWeftrun({"-n", std::to_string(mine.size() + 1), "--bind-to", "core", kHelper, "cpus"});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("usable cores"), std::string::npos) << r.err;
}

TEST(Weftrun, FailingRankTerminatesTheOthersAndSetsTheExitCode) {
  RunResult r = runWeftrun({"-n", "4", kHelper, "fail", "2", "3"});
  EXPECT_EQ(r.exitCode, 3) << r.err;
  EXPECT_LT(r.seconds, 10.0) << "the other ranks sleep 60 s and must be terminated";
  EXPECT_NE(r.err.find("rank 2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("exited with code 3"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("[2] rank 2 failing"), std::string::npos) << r.out;
}

TEST(Weftrun, RankKilledBySignalGives128PlusSignal) {
  RunResult r = runWeftrun({"-n", "3", kHelper, "killself", "0", std::to_string(SIGKILL)});
  EXPECT_EQ(r.exitCode, 128 + SIGKILL) << r.err;
  EXPECT_LT(r.seconds, 10.0);
  EXPECT_NE(r.err.find("rank 0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("killed by signal 9"), std::string::npos) << r.err;
}

TEST(Weftrun, RanksIgnoringSigtermAreKilledAfterTheGracePeriod) {
  RunResult r = runWeftrun({"-n", "3", kHelper, "stubborn", "1"});
  EXPECT_EQ(r.exitCode, 1) << r.err;
  EXPECT_GE(r.seconds, 1.5) << "SIGKILL comes after a 2 s grace period";
  EXPECT_LT(r.seconds, 10.0);
  EXPECT_NE(r.err.find("ignored SIGTERM"), std::string::npos) << r.err;
}

// A rank's stdin is /dev/null, and the descriptor weftrun opened it through is not left open
// in the rank: the rank (ls here) lists its own descriptors; /dev/null may be fd 0 and any fd
// this test process itself already had open on it (ctest's), nothing else.
TEST(Weftrun, RankInheritsNoStrayDescriptors) {
  std::set<std::string> allowed = {"0"};
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code error;
    if (std::filesystem::read_symlink(entry.path(), error) == "/dev/null") allowed.insert(entry.path().filename());
  }
  RunResult r = runWeftrun({"-n", "1", "--no-prefix", "ls", "-l", "/proc/self/fd"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::regex devNull(R"((\d+) -> /dev/null)");
  for (std::sregex_iterator it(r.out.begin(), r.out.end(), devNull), end; it != end; ++it)
    EXPECT_TRUE(allowed.count((*it)[1].str())) << "fd " << (*it)[1].str() << " leaked into the rank:\n" << r.out;
}

// The rendezvous port is held from the moment weftrun picks it: rank 0 inherits the listening
// socket (its bootstrap root accepts on it), no rank can bind the port, and only rank 0 has it.
// Before, weftrun bound a port and closed it, and rank 0 bound it again: any process could take
// it in between (a race that only `ctest -j 1` hid).
TEST(Weftrun, RendezvousPortIsHeldFromTheStartAndHandedToRankZero) {
  RunResult r = runWeftrun({"-n", "3", kHelper, "rendezvous"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("[0] rank 0 WEFT_BOOTSTRAP_FD=set listening=1 bind=EADDRINUSE"), std::string::npos) << r.out;
  for (int rank : {1, 2})
    EXPECT_NE(r.out.find("[" + std::to_string(rank) + "] rank " + std::to_string(rank) +
                         " WEFT_BOOTSTRAP_FD=unset listening=0 bind=EADDRINUSE"),
              std::string::npos)
        << r.out;
}

TEST(Weftrun, AllRanksSucceedingExitsZero) {
  RunResult r = runWeftrun({"-n", "3", kHelper, "early"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  for (int rank = 0; rank < 3; ++rank)
    EXPECT_NE(r.out.find("[" + std::to_string(rank) + "] rank " + std::to_string(rank) + " done"), std::string::npos)
        << r.out;
  EXPECT_EQ(r.err, "");
}

TEST(Weftrun, TimeoutTerminatesTheJob) {
  RunResult r = runWeftrun({"-n", "2", "--timeout", "1", kHelper, "sleep", "60"});
  EXPECT_EQ(r.exitCode, 124) << r.err;
  EXPECT_LT(r.seconds, 10.0);
  EXPECT_NE(r.err.find("time-out"), std::string::npos) << r.err;
}

TEST(Weftrun, ForwardsSigtermAndSigintToTheRanks) {
  for (int sig : {SIGTERM, SIGINT}) {
    Process p({kWeftrun, "-n", "3", kHelper, "trap"});
    // Wait until every rank has installed its handler.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      std::string out = p.out();
      size_t ready = 0;
      for (size_t pos = 0; (pos = out.find("ready", pos)) != std::string::npos; ++pos) ++ready;
      if (ready == 3) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    kill(p.pid(), sig);
    RunResult r = p.wait(20);
    EXPECT_EQ(r.exitCode, 128 + sig) << r.err;
    const std::string name = sig == SIGTERM ? "SIGTERM" : "SIGINT";
    for (int rank = 0; rank < 3; ++rank)
      EXPECT_NE(r.out.find("[" + std::to_string(rank) + "] rank " + std::to_string(rank) + " got " + name),
                std::string::npos)
          << r.out;
  }
}

TEST(Weftrun, UsageErrorsExitTwoWithUsage) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {},                      // nothing
           {kHelper, "env"},        // missing -n
           {"-n", "0", kHelper},    // N < 1
           {"-n", "-3", kHelper},   // N < 1
           {"-n", "abc", kHelper},  // not a number
           {"-n", "2"},             // no command
           {"-n", "2", "--"},       // no command after --
           {"-n"},                  // missing value
           {"--bogus", "-n", "2", kHelper},
           {"-n", "2", "--timeout", "soon", kHelper},
       }) {
    RunResult r = runWeftrun(args);
    std::string joined;
    for (const std::string& a : args) joined += a + " ";
    EXPECT_EQ(r.exitCode, 2) << joined;
    EXPECT_NE(r.err.find("usage: weftrun -n N"), std::string::npos) << joined << "\n" << r.err;
  }
  RunResult help = runWeftrun({"--help"});
  EXPECT_EQ(help.exitCode, 0);
  EXPECT_NE(help.out.find("usage: weftrun -n N"), std::string::npos);
}

TEST(Weftrun, CommandNotFoundIsAClearError) {
  RunResult r = runWeftrun({"-n", "2", "/nonexistent/weft_no_such_program"});
  EXPECT_NE(r.exitCode, 0);
  EXPECT_EQ(r.exitCode, 127);
  EXPECT_NE(r.err.find("cannot execute '/nonexistent/weft_no_such_program'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("No such file or directory"), std::string::npos) << r.err;
  RunResult inPath = runWeftrun({"-n", "1", "weft_no_such_program_in_path"});
  EXPECT_EQ(inPath.exitCode, 127) << inPath.err;
}

}  // namespace
