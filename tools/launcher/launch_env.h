// The environment weftrun gives each rank: the torchrun-style variables that
// weftCommInitFromEnv reads, a rendezvous port and a per-job secret.
#ifndef WEFT_TOOLS_LAUNCHER_LAUNCH_ENV_H_
#define WEFT_TOOLS_LAUNCHER_LAUNCH_ENV_H_

#include <string>
#include <vector>

namespace weft::launcher {

// A TCP port that was free a moment ago: bound with port 0 on all interfaces, then closed.
// Returns 0 (and sets *error) when no socket could be bound.
int findFreePort(std::string* error);

// 32 lower-case hex digits from /dev/urandom (getrandom as a fallback). Empty on failure.
std::string randomSecretHex(std::string* error);

struct JobEnv {
  int worldSize = 1;
  int port = 0;
  std::string masterAddr = "127.0.0.1";
  std::string secret;
};

// Pure: `base` (NAME=VALUE strings, e.g. from environ) with the rank variables set
// (replacing any inherited ones): RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT, WEFT_SECRET.
std::vector<std::string> rankEnvironment(const std::vector<std::string>& base, const JobEnv& job, int rank);

// The current process environment as NAME=VALUE strings.
std::vector<std::string> currentEnvironment();

}  // namespace weft::launcher

#endif  // WEFT_TOOLS_LAUNCHER_LAUNCH_ENV_H_
