// No exception crosses the C API: one thrown inside an entry point (here std::bad_alloc, from
// ncclCommInitAll asked for INT_MAX ranks under an address-space limit) comes back as
// ncclSystemError with a message, and the process lives on. The call runs in a child process
// so that the limit and any abort stay there. Entry points that return something else (a
// message, a count, a value struct) are made to fail their first allocation by this program's
// own operator new, and must return their invalid value with the message recorded.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <new>
#include <string>
#include <thread>

#include "nccl.h"

// Allocations of this thread fail while this is above zero, one per allocation.
thread_local int allocationsToFail = 0;

void* operator new(std::size_t size) {
  if (allocationsToFail > 0) {
    --allocationsToFail;
    throw std::bad_alloc();
  }
  if (void* p = std::malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
// GCC 12 at -O1 inlines these into gtest's `new TestClass` and then warns that free() meets a
// pointer from operator new: it cannot see that this operator new is the malloc above.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

// nccl_device.h's functions that return no ncclResult_t (weft refuses them all).
struct TeamValue {
  int nRanks, rank, stride;
};
extern "C" int ncclLLA2ACalcSlots(int maxElts, int maxEltSize);
extern "C" TeamValue ncclTeamWorld(const void* devComm);
extern "C" int ncclTeamRankToWorld(const void* devComm, TeamValue team, int rank);

namespace {

// Runs `call` on a fresh thread (whose last-error string has never allocated) with its first
// allocation failing; then the thread's last error must name `function` and the out-of-memory.
void expectNoExceptionAndAMessage(const char* function, const std::function<void()>& call) {
  bool escaped = false;
  std::string message;
  std::thread([&] {
    allocationsToFail = 1;
    try {
      call();
    } catch (...) {
      escaped = true;
    }
    allocationsToFail = 0;
    message = ncclGetLastError(nullptr);
  }).join();
  EXPECT_FALSE(escaped) << function << ": an exception crossed the C API";
  EXPECT_NE(message.find(function), std::string::npos) << message;
  EXPECT_NE(message.find("out of memory"), std::string::npos) << message;
}

// Child exit codes: 0 ncclSystemError with a message naming the call and the out-of-memory.
int initAllUnderMemoryLimit() {
  rlimit limit{};
  limit.rlim_cur = limit.rlim_max = 2ull << 30;  // 2 GiB: the library fits, INT_MAX ranks do not
  if (setrlimit(RLIMIT_AS, &limit) != 0) return 10;
  ncclComm_t comms[1] = {nullptr};
  ncclResult_t result = ncclCommInitAll(comms, INT_MAX, nullptr);
  if (result != ncclSystemError) return 20 + static_cast<int>(result);
  std::string message = ncclGetLastError(nullptr);
  if (message.find("ncclCommInitAll") == std::string::npos) return 11;
  if (message.find("out of memory") == std::string::npos) return 12;
  return 0;
}

TEST(ApiBoundary, BadAllocBecomesSystemErrorNotAnAbort) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "skipped: ASan and TSan reserve terabytes of shadow memory, so no address-space limit can be set";
#endif
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(60);
    _exit(initAllUnderMemoryLimit());
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_FALSE(WIFSIGNALED(status)) << "killed by signal " << WTERMSIG(status) << " (" << strsignal(WTERMSIG(status))
                                    << "): the exception escaped";
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "20+n: returned ncclResult_t n; 11/12: message lacks the call or the cause";
}

TEST(ApiBoundary, EntryPointsWithoutAResultCodeCatchToo) {
  expectNoExceptionAndAMessage("ncclLLA2ACalcSlots", [] { EXPECT_EQ(ncclLLA2ACalcSlots(1, 1), -1); });
  expectNoExceptionAndAMessage("ncclTeamWorld", [] { EXPECT_EQ(ncclTeamWorld(nullptr).rank, -1); });
  expectNoExceptionAndAMessage("ncclTeamRankToWorld", [] {
    EXPECT_EQ(ncclTeamRankToWorld(nullptr, TeamValue{1, 0, 1}, 0), -1);
  });
  // A debug file name longer than any short-string buffer: re-reading the settings allocates.
  setenv("NCCL_DEBUG_FILE", "/dev/null/weft-api-boundary-test-%h-%p.log", 1);
  expectNoExceptionAndAMessage("ncclResetDebugInit", [] { ncclResetDebugInit(); });
  unsetenv("NCCL_DEBUG_FILE");
  ncclResetDebugInit();
}

}  // namespace
