// The UCX settings weft makes for its users (transport/ucx/ucx_worker.cc) must reach UCX's
// transports. ucp_config_modify accepts any name and only says, when the worker is made, that a
// name reached no transport ("invalid configuration"): weft's tcp segment sizes were spelled
// with the prefix of the environment variable ("TCP_TX_SEG_SIZE") and never took effect.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "transport/ucx/ucx_library.h"
#include "transport/ucx/ucx_worker.h"

using namespace weft;

namespace {

// What UCX prints while a child process makes a worker (UCX's context is made once per process:
// a fresh one for each call).
std::string ucxLogOfMakingAWorker() {
  int out[2];
  if (pipe(out) != 0) return "pipe failed";
  pid_t child = fork();
  if (child < 0) return "fork failed";
  if (child == 0) {
    alarm(60);
    dup2(out[1], STDOUT_FILENO);
    dup2(out[1], STDERR_FILENO);
    close(out[0]);
    std::shared_ptr<UcxWorker> worker;
    const int code = UcxWorker::create("", &worker) == ncclSuccess ? 0 : 3;
    worker.reset();
    fflush(stdout);  // UCX logs through stdio: _exit would drop what is buffered
    fflush(stderr);
    _exit(code);
  }
  close(out[1]);
  std::string log;
  char chunk[4096];
  for (ssize_t n; (n = read(out[0], chunk, sizeof(chunk))) > 0;) log.append(chunk, static_cast<size_t>(n));
  close(out[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    log += "\n(the child failed, status " + std::to_string(status) + ")";
  return log;
}

TEST(UcxSettings, WeftsTcpSegmentSizesReachUcxsTcpTransport) {
  // UCX reads its log level when it is loaded, and the tcp transport must be the one in use.
  setenv("UCX_TLS", "tcp", 1);
  setenv("UCX_LOG_LEVEL", "debug", 1);
  for (const char* name : {"UCX_TCP_TX_SEG_SIZE", "UCX_TCP_RX_SEG_SIZE"}) unsetenv(name);
  std::string why;
  if (!loadUcxLibrary(&why)) GTEST_SKIP() << "skipped: UCX cannot be loaded: " << why;
  const std::string log = ucxLogOfMakingAWorker();
  ASSERT_EQ(log.find("(the child failed"), std::string::npos) << log;
  EXPECT_EQ(log.find("invalid configuration"), std::string::npos) << log;
  // UCX says what it applied at debug level, where its build logs that level (Debian's does).
  if (log.find("UCX  DEBUG") == std::string::npos) {
    std::printf("UCX logs nothing at debug level: only the absence of warnings was checked\n");
    return;
  }
  EXPECT_NE(log.find("apply UCT configuration TX_SEG_SIZE=64K"), std::string::npos) << log;
  EXPECT_NE(log.find("apply UCT configuration RX_SEG_SIZE=128K"), std::string::npos) << log;
}

}  // namespace
