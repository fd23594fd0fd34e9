// The environment weftrun gives each rank: the torchrun-style variables that
// weftCommInitFromEnv reads, a rendezvous port and a per-job secret.
#ifndef WEFT_TOOLS_LAUNCHER_LAUNCH_ENV_H_
#define WEFT_TOOLS_LAUNCHER_LAUNCH_ENV_H_

#include <string>
#include <vector>

namespace weft::launcher {

// The rendezvous port, held from now on: a TCP socket bound to a free port of `address` (IPv4)
// and listening, close-on-exec. Rank 0 inherits it (WEFT_BOOTSTRAP_FD) and its bootstrap root
// accepts on it, so no other process can take the port between the launcher's choice and the
// root's start, as it could when the launcher bound a port, closed it and let rank 0 bind it
// again. fd -1 (and *error set) when no socket could be bound.
struct RendezvousSocket {
  int fd = -1;
  int port = 0;
};
RendezvousSocket openRendezvousSocket(const std::string& address, std::string* error);

// 32 lower-case hex digits from /dev/urandom (getrandom as a fallback). Empty on failure.
std::string randomSecretHex(std::string* error);

struct JobEnv {
  int worldSize = 1;
  int port = 0;
  std::string masterAddr = "127.0.0.1";
  std::string secret;
  int bootstrapFd = -1;  // the rendezvous socket rank 0 inherits; -1: none
};

// Pure: `base` (NAME=VALUE strings, e.g. from environ) with the rank variables set
// (replacing any inherited ones): RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT, WEFT_SECRET, and for rank 0 WEFT_BOOTSTRAP_FD (when the job has
// one; an inherited one is dropped from every rank).
std::vector<std::string> rankEnvironment(const std::vector<std::string>& base, const JobEnv& job, int rank);

// The current process environment as NAME=VALUE strings.
std::vector<std::string> currentEnvironment();

}  // namespace weft::launcher

#endif  // WEFT_TOOLS_LAUNCHER_LAUNCH_ENV_H_
