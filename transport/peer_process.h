// Whether a peer process on this host has exited. The peer hands over a pidfd of itself with
// the memory it shares (fd_broker.h): it names that very process in any PID namespace, turns
// readable as soon as the process exits (a zombie its parent has not reaped included), and is
// never confused with a later process that reuses the pid. kill(pid, 0), the fallback where
// no pidfd came (kernels before 5.3), succeeds on a zombie and means nothing across PID
// namespaces.
#pragma once

#include <sys/types.h>

namespace weft {

class PeerProcess {
 public:
  PeerProcess() = default;
  // Takes ownership of `pidfd` (-1: none); `pid` is the peer's own view of its pid.
  PeerProcess(int pidfd, pid_t pid) : pidfd_(pidfd), pid_(pid) {}
  ~PeerProcess();
  PeerProcess(PeerProcess&& other) noexcept;
  PeerProcess& operator=(PeerProcess&& other) noexcept;
  PeerProcess(const PeerProcess&) = delete;
  PeerProcess& operator=(const PeerProcess&) = delete;

  // A process known only by its pid (found in a table, not handed over): a pidfd opened now,
  // so a zombie counts as exited; where pidfd_open is missing, kill(pid, 0).
  static PeerProcess byPid(pid_t pid);

  // One system call; a peer that is this process never counts as exited.
  bool exited() const;
  pid_t pid() const { return pid_; }

 private:
  int pidfd_ = -1;
  pid_t pid_ = 0;
};

// A pidfd of this process for handing to peers (close-on-exec), or -1 where the kernel has none.
int pidfdOfThisProcess();

}  // namespace weft
