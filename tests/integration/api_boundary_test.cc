// No exception crosses the C API: one thrown inside an entry point (here std::bad_alloc, from
// ncclCommInitAll asked for INT_MAX ranks under an address-space limit) comes back as
// ncclSystemError with a message, and the process lives on. The call runs in a child process
// so that the limit and any abort stay there.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <string>

#include "nccl.h"

namespace {

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

}  // namespace
