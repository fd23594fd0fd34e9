// Connections a listener has accepted but that have not yet proven who they are (the bootstrap
// root's, a rank's peer handshake listener's). Anyone who can reach the port can open them, so
// they are bounded: accepted in bursts from a non-blocking listener, at most `capacity` held
// (the oldest that has sent nothing is dropped first: a real peer answers the greeting at
// once), and when the process is out of descriptors the listener is left out of poll for
// 100 ms instead of spinning on it. Only the first few rejections are logged at WARN.
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/deadline.h"
#include "common/log.h"
#include "common/socket.h"

namespace weft {

// Pending: a movable struct with `int fd`, `SocketAddress from` and `size_t got` (bytes received).
template <class Pending>
class StrangerQueue {
 public:
  StrangerQueue(std::string who, uint32_t logSubsystem, size_t capacity)
      : who_(std::move(who)), logSubsystem_(logSubsystem), capacity_(capacity) {}
  ~StrangerQueue() { closeAll(); }
  StrangerQueue(const StrangerQueue&) = delete;
  StrangerQueue& operator=(const StrangerQueue&) = delete;

  std::vector<Pending> pending;

  // What to poll for `listenFd`: -1 (which poll skips) while paused.
  int pollFd(int listenFd) const { return pausedUntil_.expired() ? listenFd : -1; }

  // Accepts what is waiting on `listenFd`, a burst at a time. `greet(Pending&)` sets up each new
  // connection (its deadline, its challenge, sent) and returns false to close it instead.
  template <class Greet>
  void acceptReady(int listenFd, Greet&& greet) {
    for (int burst = 0; burst < 16; ++burst) {
      Pending p{};
      p.from.length = sizeof(p.from.storage);
      p.fd =
          accept4(listenFd, reinterpret_cast<sockaddr*>(&p.from.storage), &p.from.length, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (p.fd < 0) {
        if (errno != EMFILE && errno != ENFILE) return;  // EAGAIN: nothing more waiting
        if (!pending.empty()) {
          drop(oldestToDrop(), "dropped to free a descriptor (the process is out of them)");
          continue;
        }
        WEFT_WARN("%s: out of file descriptors; not accepting for 100 ms", who_.c_str());
        pausedUntil_ = Deadline::after(0.1);
        return;
      }
      if (pending.size() >= capacity_) drop(oldestToDrop(), "dropped: too many connections have not said who they are");
      if (!greet(p)) {
        close(p.fd);
        continue;
      }
      pending.push_back(std::move(p));
    }
  }

  // Closes pending connection `index`, logging why.
  void drop(size_t index, const char* reason) {
    const std::string from = pending[index].from.toString();
    if (++rejected_ <= kWarnings)
      WEFT_WARN("%s rejected a connection from %s: %s%s", who_.c_str(), from.c_str(), reason,
                rejected_ == kWarnings ? " (further rejections are logged at INFO)" : "");
    else
      WEFT_INFO(logSubsystem_, "%s rejected a connection from %s: %s", who_.c_str(), from.c_str(), reason);
    const int fd = pending[index].fd;
    pending.erase(pending.begin() + index);  // first: what it owns may still write to fd
    close(fd);
  }

  // Closes every pending connection, each after what it owns (a TLS session may still write
  // its close_notify to the fd).
  void closeAll() {
    std::vector<int> fds;
    for (const auto& p : pending) fds.push_back(p.fd);
    pending.clear();
    for (int fd : fds) close(fd);
  }

  // Hands pending connection `index` over (no longer held or closed here); returns its fd.
  int release(size_t index) {
    const int fd = pending[index].fd;
    pending.erase(pending.begin() + index);
    return fd;
  }

 private:
  static constexpr size_t kWarnings = 8;

  // The oldest connection that has sent nothing yet, else the oldest.
  size_t oldestToDrop() const {
    for (size_t i = 0; i < pending.size(); ++i)
      if (pending[i].got == 0) return i;
    return 0;
  }

  std::string who_;
  uint32_t logSubsystem_;
  size_t capacity_;
  Deadline pausedUntil_ = Deadline::after(0);
  size_t rejected_ = 0;
};

}  // namespace weft
