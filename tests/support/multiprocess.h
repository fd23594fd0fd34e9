// Runs a test body as N rank processes (fork), the way separate launches would, with a
// deadline: a hung rank is killed and reported, never left to hang the test run.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "nccl.h"
#include "tests/support/process_usage.h"

namespace weft::testing {

struct RankOutcome {
  int exitCode = -1;  // 0 success; 124 killed at the deadline; 128+n killed by signal n
};

// Forks `nranks` children; each runs body(rank, id) and exits with its return value. `id` comes
// from ncclGetUniqueId in one more child, which hosts the bootstrap root until all ranks ended;
// this process starts no thread, so forking it is safe under the sanitizers too.
// Refuses (every outcome -1, with a message) when this process runs a thread: fork must come first.
std::vector<RankOutcome> runRankProcesses(int nranks, const std::function<int(int rank, const ncclUniqueId& id)>& body,
                                          double timeoutSeconds = 120);

// The same with `nids` distinct unique ids, every root alive until all ranks ended
// (ncclCommInitRankScalable).
std::vector<RankOutcome> runRankProcessesWithIds(
    int nranks, int nids, const std::function<int(int rank, const std::vector<ncclUniqueId>& ids)>& body,
    double timeoutSeconds = 120);

// How many loops, trials or calls a long test runs: the positive integer in environment variable
// `name` (the slow label sets it), else `fallback`.
int countFromEnv(const char* name, int fallback);

// True when every rank exited 0; otherwise a text listing the failures for the assertion.
std::string describeFailures(const std::vector<RankOutcome>& outcomes);

// A rank process's answer to the test that forked it, through a file: the rank writes `text`
// (false when it cannot), the test takes it (what was written, or "" when nothing was) and
// removes the file.
bool putRankAnswer(const std::string& path, const std::string& text);
std::string takeRankAnswer(const std::string& path);

}  // namespace weft::testing
