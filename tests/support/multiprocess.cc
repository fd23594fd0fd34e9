#include "tests/support/multiprocess.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

namespace weft::testing {

namespace {

// The bootstrap root lives in a process of its own, as a launcher's would, rather than in this
// one: forking while a thread runs here (the root's) can leave a child blocked forever on a
// lock that thread held (AddressSanitizer's allocator does not guard fork), and a rank's death
// must not take the root with it. The child sends the id back, then keeps its root thread
// alive until `release` reaches end of file.
struct RootHost {
  pid_t pid = -1;
  int release = -1;
};

bool startRootHost(int nids, std::vector<ncclUniqueId>* ids, RootHost* host) {
  int idPipe[2], releasePipe[2];
  if (pipe(idPipe) != 0) return false;
  if (pipe(releasePipe) != 0) {
    close(idPipe[0]);
    close(idPipe[1]);
    return false;
  }
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    close(idPipe[0]);
    close(releasePipe[1]);
    for (int i = 0; i < nids; ++i) {
      ncclUniqueId made;
      if (ncclGetUniqueId(&made) != ncclSuccess) {
        fprintf(stderr, "ncclGetUniqueId failed: %s\n", ncclGetLastError(nullptr));
        _exit(1);
      }
      if (write(idPipe[1], &made, sizeof(made)) != static_cast<ssize_t>(sizeof(made))) _exit(1);
    }
    close(idPipe[1]);
    char byte;
    while (read(releasePipe[0], &byte, 1) > 0) {}
    _exit(0);
  }
  close(idPipe[1]);
  close(releasePipe[0]);
  ids->resize(nids);
  bool complete = pid > 0;
  for (int i = 0; i < nids && complete; ++i)
    complete = read(idPipe[0], &(*ids)[i], sizeof((*ids)[i])) == static_cast<ssize_t>(sizeof((*ids)[i]));
  close(idPipe[0]);
  host->pid = pid;
  host->release = releasePipe[1];
  return complete;
}

void stopRootHost(RootHost* host) {
  if (host->release >= 0) close(host->release);
  if (host->pid > 0) waitpid(host->pid, nullptr, 0);
}

}  // namespace

std::vector<RankOutcome> runRankProcesses(int nranks, const std::function<int(int, const ncclUniqueId&)>& body,
                                          double timeoutSeconds) {
  return runRankProcessesWithIds(
      nranks, 1, [&](int rank, const std::vector<ncclUniqueId>& ids) { return body(rank, ids[0]); }, timeoutSeconds);
}

std::vector<RankOutcome> runRankProcessesWithIds(int nranks, int nids,
                                                 const std::function<int(int, const std::vector<ncclUniqueId>&)>& body,
                                                 double timeoutSeconds) {
  std::vector<ncclUniqueId> ids;
  std::vector<RankOutcome> outcomes(nranks);
  if (int threads = threadsInThisProcess(); threads != 1) {
    fprintf(stderr, "runRankProcesses: refusing to fork with %d threads running in this process\n", threads);
    return outcomes;
  }
  RootHost root;
  const bool haveId = startRootHost(nids, &ids, &root);
  if (!haveId) {
    fprintf(stderr, "could not start the bootstrap root's process\n");
    stopRootHost(&root);
    return outcomes;
  }
  fflush(stdout);
  fflush(stderr);
  std::vector<pid_t> pids(nranks, -1);
  for (int r = 0; r < nranks; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      int code = body(r, ids);
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
  stopRootHost(&root);
  return outcomes;
}

int countFromEnv(const char* name, int fallback) {
  const char* text = std::getenv(name);
  return text && std::atoi(text) > 0 ? std::atoi(text) : fallback;
}

std::string describeFailures(const std::vector<RankOutcome>& outcomes) {
  std::string text;
  for (size_t r = 0; r < outcomes.size(); ++r)
    if (outcomes[r].exitCode != 0)
      text += "rank " + std::to_string(r) + " exited " + std::to_string(outcomes[r].exitCode) +
              (outcomes[r].exitCode == 124 ? " (killed at the deadline: hang)" : "") + "; ";
  return text;
}

bool putRankAnswer(const std::string& path, const std::string& text) {
  FILE* f = fopen(path.c_str(), "w");
  if (!f) return false;
  const bool written = fwrite(text.data(), 1, text.size(), f) == text.size();
  return fclose(f) == 0 && written;
}

std::string takeRankAnswer(const std::string& path) {
  std::string text;
  if (FILE* f = fopen(path.c_str(), "r")) {
    char chunk[256];
    for (size_t got; (got = fread(chunk, 1, sizeof chunk, f)) > 0;) text.append(chunk, got);
    fclose(f);
  }
  unlink(path.c_str());
  return text;
}

}  // namespace weft::testing
