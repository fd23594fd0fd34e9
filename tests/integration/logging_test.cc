// NCCL_DEBUG / NCCL_DEBUG_SUBSYS / NCCL_DEBUG_FILE: lines carry host, pid and rank; INFO says
// which transport each peer uses and which algorithm each collective chose.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "nccl.h"

namespace {

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(Logging, InfoNamesTransportsAndAlgorithmsInTheDebugFile) {
  std::string pattern = "/tmp/weft-log-test-%h-%p.txt";
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_SUBSYS", "INIT,TUNING", 1);
  setenv("NCCL_DEBUG_FILE", pattern.c_str(), 1);
  setenv("WEFT_ALGO", "allreduce:tree", 1);  // not the default here: the line must name what ran
  ncclResetDebugInit();
  ncclComm_t comms[2];
  ASSERT_EQ(ncclCommInitAll(comms, 2, nullptr), ncclSuccess);
  float data[2][64] = {};
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < 2; ++r)
    ASSERT_EQ(ncclAllReduce(data[r], data[r], 64, ncclFloat32, ncclSum, comms[r], nullptr), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (auto* c : comms) ncclCommDestroy(c);

  char host[256] = "";
  gethostname(host, sizeof(host) - 1);
  std::string shortHost = std::string(host).substr(0, std::string(host).find('.'));
  std::string path = "/tmp/weft-log-test-" + shortHost + "-" + std::to_string(getpid()) + ".txt";
  unsetenv("NCCL_DEBUG_FILE");
  unsetenv("WEFT_ALGO");
  ncclResetDebugInit();  // closes the file
  std::string log = readFile(path);
  unlink(path.c_str());
  // Every line: host:pid:tid [rank] NCCL INFO ... (no rank on process-wide lines); for each
  // rank, a line of its own for its connection to the other through shared memory, and for the
  // all-reduce's choice (64 floats, sum, the forced tree), though one thread drove both ranks.
  const std::string source = shortHost + ":" + std::to_string(getpid()) + ":[0-9]+";
  const std::string prefix = source + " \\[([01])\\] NCCL INFO ";
  const std::regex line("^" + source + "( \\[[01]\\])? NCCL INFO .*$"),
      channel("^" + prefix + "Channel 00 : ([01])\\[\\2\\] -> ([01])\\[\\3\\] via SHM \\(same host\\)$");
  const std::regex choice("^" + prefix +
                          "allreduce: 64 x float op sum root -?[0-9]+ -> algorithm tree, [1-9][0-9]* steps, "
                          "slices of [1-9][0-9]* bytes$");
  std::set<std::string> connections, choices;
  std::istringstream lines(log);
  int count = 0;
  for (std::string l; std::getline(lines, l); ++count) {
    std::smatch m;
    EXPECT_TRUE(std::regex_match(l, line)) << "not host:pid:tid [rank] NCCL INFO: " << l;
    if (std::regex_match(l, m, channel)) {
      EXPECT_EQ(m[1], m[2]) << "a rank's line names it as the source: " << l;
      EXPECT_NE(m[2], m[3]) << l;
      connections.insert(m[2].str() + "->" + m[3].str());
    }
    if (std::regex_match(l, m, choice)) choices.insert(m[1]);
  }
  EXPECT_GT(count, 0) << "no log";
  EXPECT_EQ(connections, (std::set<std::string>{"0->1", "1->0"})) << log;
  EXPECT_EQ(choices, (std::set<std::string>{"0", "1"})) << log;
}

TEST(Logging, WarnLevelReportsBadArgumentsWithoutInfoLines) {
  std::string path = "/tmp/weft-log-test-warn-" + std::to_string(getpid()) + ".txt";
  setenv("NCCL_DEBUG", "WARN", 1);
  setenv("NCCL_DEBUG_FILE", path.c_str(), 1);
  ncclResetDebugInit();
  ncclComm_t comm;
  ASSERT_EQ(ncclCommInitAll(&comm, 1, nullptr), ncclSuccess);
  float x = 0;
  EXPECT_EQ(ncclAllReduce(&x, &x, 1, static_cast<ncclDataType_t>(99), ncclSum, comm, nullptr), ncclInvalidArgument);
  ncclCommDestroy(comm);
  unsetenv("NCCL_DEBUG_FILE");
  ncclResetDebugInit();
  std::string log = readFile(path);
  unlink(path.c_str());
  EXPECT_NE(log.find("NCCL WARN"), std::string::npos) << log;
  EXPECT_NE(log.find("datatype=99"), std::string::npos) << log;
  EXPECT_EQ(log.find("NCCL INFO"), std::string::npos) << "WARN level prints no INFO lines";
}

// The debug file is opened close-on-exec: a program the rank starts (a shell, a compiler, a
// data loader) must not inherit it. The child lists its own descriptors.
TEST(Logging, DebugFileIsNotInheritedAcrossExec) {
  const std::string path = "/tmp/weft-log-cloexec-" + std::to_string(getpid()) + ".txt";
  setenv("NCCL_DEBUG", "VERSION", 1);
  setenv("NCCL_DEBUG_FILE", path.c_str(), 1);
  ncclResetDebugInit();
  int version = 0;
  ASSERT_EQ(ncclGetVersion(&version), ncclSuccess);  // logs its line, so the file is open
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    dup2(out[1], 1);
    execlp("ls", "ls", "-l", "/proc/self/fd", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  std::string listing;
  char buffer[4096];
  for (ssize_t n; (n = read(out[0], buffer, sizeof(buffer))) > 0;) listing.append(buffer, n);
  close(out[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  unsetenv("NCCL_DEBUG_FILE");
  unsetenv("NCCL_DEBUG");
  ncclResetDebugInit();
  EXPECT_NE(readFile(path).find("API)"), std::string::npos) << "the file was not written";
  unlink(path.c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << listing;
  EXPECT_EQ(listing.find(path), std::string::npos) << "inherited by an exec'd program:\n" << listing;
}

}  // namespace
