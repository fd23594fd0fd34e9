#include "transport/peer_process.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace weft {

PeerProcess::~PeerProcess() {
  if (pidfd_ >= 0) close(pidfd_);
}

PeerProcess::PeerProcess(PeerProcess&& other) noexcept : pidfd_(std::exchange(other.pidfd_, -1)), pid_(other.pid_) {}

PeerProcess& PeerProcess::operator=(PeerProcess&& other) noexcept {
  if (this != &other) {
    if (pidfd_ >= 0) close(pidfd_);
    pidfd_ = std::exchange(other.pidfd_, -1);
    pid_ = other.pid_;
  }
  return *this;
}

bool PeerProcess::exited() const {
  if (pidfd_ >= 0) {
    pollfd watch{pidfd_, POLLIN, 0};
    return poll(&watch, 1, 0) > 0 && (watch.revents & (POLLIN | POLLHUP)) != 0;
  }
  return pid_ > 0 && pid_ != getpid() && kill(pid_, 0) != 0 && errno == ESRCH;
}

PeerProcess PeerProcess::byPid(pid_t pid) {
#ifdef SYS_pidfd_open
  return PeerProcess(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)), pid);
#else
  return PeerProcess(-1, pid);
#endif
}

int pidfdOfThisProcess() {
#ifdef SYS_pidfd_open
  // PIDFD_NONBLOCK is not wanted; pidfds are close-on-exec by definition.
  return static_cast<int>(syscall(SYS_pidfd_open, getpid(), 0));
#else
  return -1;
#endif
}

}  // namespace weft
