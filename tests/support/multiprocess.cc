#include "tests/support/multiprocess.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

namespace weft::testing {

std::vector<RankOutcome> runRankProcesses(int nranks, const std::function<int(int, const ncclUniqueId&)>& body,
                                          double timeoutSeconds) {
  ncclUniqueId id;
  std::vector<RankOutcome> outcomes(nranks);
  if (ncclGetUniqueId(&id) != ncclSuccess) {
    fprintf(stderr, "ncclGetUniqueId failed: %s\n", ncclGetLastError(nullptr));
    return outcomes;
  }
  fflush(stdout);
  fflush(stderr);
  std::vector<pid_t> pids(nranks, -1);
  for (int r = 0; r < nranks; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      int code = body(r, id);
      fflush(stdout);
      fflush(stderr);
      _exit(code);  // no static destructors: they belong to the parent
    }
    pids[r] = pid;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSeconds);
  int remaining = nranks;
  while (remaining > 0) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      for (int r = 0; r < nranks; ++r)
        if (pids[r] == pid) {
          outcomes[r].exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
          pids[r] = -1;
          --remaining;
        }
      continue;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      for (int r = 0; r < nranks; ++r)
        if (pids[r] > 0) {
          kill(pids[r], SIGKILL);
          waitpid(pids[r], nullptr, 0);
          outcomes[r].exitCode = 124;
          --remaining;
        }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return outcomes;
}

std::string describeFailures(const std::vector<RankOutcome>& outcomes) {
  std::string text;
  for (size_t r = 0; r < outcomes.size(); ++r)
    if (outcomes[r].exitCode != 0)
      text += "rank " + std::to_string(r) + " exited " + std::to_string(outcomes[r].exitCode) +
              (outcomes[r].exitCode == 124 ? " (killed at the deadline: hang)" : "") + "; ";
  return text;
}

}  // namespace weft::testing
