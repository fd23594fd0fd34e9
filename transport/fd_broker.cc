#include "transport/fd_broker.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "common/deadline.h"
#include "common/log.h"
#include "common/socket.h"
#include "common/status.h"
#include "transport/peer_process.h"

namespace weft {

namespace {

constexpr uint32_t kRequestMagic = 0x77666431;  // "wfd1"
constexpr double kAnswerSeconds = 1.0;          // a client that does not send its request in time is dropped

struct Request {
  uint32_t magic = kRequestMagic;
  uint32_t reserved = 0;
  uint64_t secret[2] = {};
};

enum class Reply : uint32_t { Granted = 1, Refused = 2 };

// The other end runs as this user (root may serve anyone; nobody else is admitted).
bool peerIsTrusted(int fd) { return socketPeerUid(fd) == geteuid(); }

ncclResult_t randomBytes(void* out, size_t bytes) {
  auto* p = static_cast<char*>(out);
  while (bytes > 0) {
    ssize_t n = getrandom(p, bytes, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(ncclSystemError, "fd broker: getrandom failed: %s", strerror(errno));
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return ncclSuccess;
}

// Sends `reply`, with `fd` and `ownerPidfd` (when there is one) attached when granted.
void sendReply(int client, Reply reply, int fd, int ownerPidfd = -1) {
  uint32_t word = static_cast<uint32_t>(reply);
  iovec io{&word, sizeof word};
  msghdr message{};
  message.msg_iov = &io;
  message.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))] = {};
  if (reply == Reply::Granted) {
    const int fds[2] = {fd, ownerPidfd};
    const size_t count = ownerPidfd >= 0 ? 2 : 1;
    message.msg_control = control;
    message.msg_controllen = CMSG_SPACE(count * sizeof(int));
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(count * sizeof(int));
    std::memcpy(CMSG_DATA(header), fds, count * sizeof(int));
  }
  // A fresh socket's buffer takes four bytes at once; a client that vanished just misses it.
  (void)sendmsg(client, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
}

class Broker {
 public:
  static Broker& instance() {
    static auto* broker = new Broker();  // outlives static destructors, which may withdraw offers
    return *broker;
  }

  ncclResult_t offer(int fd, FdTicket* ticket) {
    FdTicket made;
    WEFT_CHECK(randomBytes(made.secret, sizeof made.secret));
    std::lock_guard<std::mutex> lock(mutex_);
    forgetParentAfterFork();
    if (!running_) WEFT_CHECK(startLocked());
    std::snprintf(made.socketName, sizeof made.socketName, "%s", name_);
    offers_[{made.secret[0], made.secret[1]}] = fd;
    *ticket = made;
    return ncclSuccess;
  }

  void withdraw(const FdTicket& ticket) {
    std::thread* thread = nullptr;
    int wake = -1, listening = -1, self = -1;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      forgetParentAfterFork();
      offers_.erase({ticket.secret[0], ticket.secret[1]});
      if (!offers_.empty() || !running_) return;
      // The last offer is gone: stop the thread, outside the lock (it takes the lock to answer).
      running_ = false;
      std::swap(thread, thread_);
      std::swap(wake, wakeFd_);
      std::swap(listening, listenFd_);
      std::swap(self, selfPidfd_);
    }
    uint64_t one = 1;
    (void)!write(wake, &one, sizeof one);
    thread->join();
    delete thread;
    close(wake);
    close(listening);
    if (self >= 0) close(self);
  }

 private:
  // A forked child inherits the parent's offers and sockets but not its thread: it serves
  // nothing of the parent's and starts a broker of its own when it offers something.
  void forgetParentAfterFork() {
    if (!running_ || owner_ == getpid()) return;
    close(listenFd_);
    close(wakeFd_);
    if (selfPidfd_ >= 0) close(selfPidfd_);  // the parent's
    listenFd_ = wakeFd_ = selfPidfd_ = -1;
    thread_ = nullptr;  // the parent's thread object; there is no such thread here
    running_ = false;
    offers_.clear();
  }

  ncclResult_t startLocked() {
    uint64_t nonce = 0;
    WEFT_CHECK(randomBytes(&nonce, sizeof nonce));
    std::snprintf(name_, sizeof name_, "weft-fd-%d-%016llx", static_cast<int>(getpid()),
                  static_cast<unsigned long long>(nonce));
    int listening = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (listening < 0) return fail(ncclSystemError, "fd broker: socket failed: %s", strerror(errno));
    sockaddr_un address;
    socklen_t length = abstractUnixAddress(name_, &address);
    if (bind(listening, reinterpret_cast<sockaddr*>(&address), length) != 0 || listen(listening, 128) != 0) {
      int err = errno;
      close(listening);
      return fail(ncclSystemError, "fd broker: cannot listen on @%s: %s", name_, strerror(err));
    }
    int wake = eventfd(0, EFD_CLOEXEC);
    if (wake < 0) {
      int err = errno;
      close(listening);
      return fail(ncclSystemError, "fd broker: eventfd failed: %s", strerror(err));
    }
    listenFd_ = listening;
    wakeFd_ = wake;
    selfPidfd_ = pidfdOfThisProcess();
    owner_ = getpid();
    running_ = true;
    thread_ = new std::thread([this, listening, wake] { serve(listening, wake); });
    return ncclSuccess;
  }

  void serve(int listening, int wake) {
    for (;;) {
      pollfd fds[2] = {{listening, POLLIN, 0}, {wake, POLLIN, 0}};
      if (poll(fds, 2, -1) < 0 && errno != EINTR) return;
      if (fds[1].revents) return;
      if (!(fds[0].revents & POLLIN)) continue;
      int client = accept4(listening, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (client < 0) continue;
      answer(client);
      close(client);
    }
  }

  void answer(int client) {
    Request request;
    if (!peerIsTrusted(client)) return sendReply(client, Reply::Refused, -1);
    if (recvAll(client, &request, sizeof request, Deadline::after(kAnswerSeconds)) != ncclSuccess) return;
    std::lock_guard<std::mutex> lock(mutex_);  // held while sending: a withdrawn fd is never sent
    auto it = offers_.find({request.secret[0], request.secret[1]});
    if (request.magic != kRequestMagic || it == offers_.end()) return sendReply(client, Reply::Refused, -1);
    sendReply(client, Reply::Granted, it->second, selfPidfd_);
  }

  std::mutex mutex_;
  std::map<std::pair<uint64_t, uint64_t>, int> offers_;
  bool running_ = false;
  pid_t owner_ = 0;
  char name_[sizeof(FdTicket::socketName)] = {};
  int listenFd_ = -1;
  int wakeFd_ = -1;
  int selfPidfd_ = -1;  // granted with every descriptor: how the fetcher learns that this process exited
  std::thread* thread_ = nullptr;
};

// Waits for the reply and the descriptors that come with it (the owner's pidfd is optional).
ncclResult_t receiveReply(int fd, const Deadline& deadline, const char* name, int* out, int* ownerPidfd) {
  for (;;) {
    uint32_t word = 0;
    iovec io{&word, sizeof word};
    alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))] = {};
    msghdr message{};
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    ssize_t n = recvmsg(fd, &message, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n == static_cast<ssize_t>(sizeof word)) {
      cmsghdr* header = CMSG_FIRSTHDR(&message);
      int fds[2] = {-1, -1};
      size_t count = 0;
      if (header && header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_RIGHTS) {
        count = std::min<size_t>(2, (header->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        std::memcpy(fds, CMSG_DATA(header), count * sizeof(int));
      }
      if (static_cast<Reply>(word) != Reply::Granted || count == 0) {
        for (size_t i = 0; i < count; ++i) close(fds[i]);
        return fail(ncclRemoteError, "fd broker @%s refused the request (offer withdrawn, or another user)", name);
      }
      *out = fds[0];
      if (ownerPidfd)
        *ownerPidfd = fds[1];
      else if (fds[1] >= 0)
        close(fds[1]);
      return ncclSuccess;
    }
    if (n >= 0) return fail(ncclRemoteError, "fd broker @%s closed the connection without an answer", name);
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      return fail(ncclRemoteError, "fd broker @%s: receive failed: %s", name, strerror(errno));
    pollfd pfd{fd, POLLIN, 0};
    poll(&pfd, 1, deadline.millisecondsLeft(100));
    if (deadline.expired()) return fail(ncclRemoteError, "fd broker @%s did not answer in time (WEFT_TIMEOUT)", name);
  }
}

}  // namespace

ncclResult_t offerFileDescriptor(int fd, FdTicket* ticket) {
  if (fd < 0 || !ticket) return fail(ncclInternalError, "fd broker: nothing to offer");
  return Broker::instance().offer(fd, ticket);
}

void withdrawFileDescriptor(const FdTicket& ticket) {
  if (ticket.valid()) Broker::instance().withdraw(ticket);
}

ncclResult_t fetchFileDescriptor(const FdTicket& ticket, double timeoutSeconds, int* out, int* ownerPidfd) {
  *out = -1;
  if (ownerPidfd) *ownerPidfd = -1;
  char name[sizeof ticket.socketName + 1] = {};
  std::memcpy(name, ticket.socketName, sizeof ticket.socketName);
  if (!name[0]) return fail(ncclInternalError, "fd broker: empty ticket");
  const Deadline deadline = Deadline::after(timeoutSeconds);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return fail(ncclSystemError, "fd broker: socket failed: %s", strerror(errno));
  sockaddr_un address;
  socklen_t length = abstractUnixAddress(name, &address);
  // A full backlog says EAGAIN: retry until the deadline. Refused: nobody listens (the owner
  // is gone, or lives in another network namespace).
  while (connect(fd, reinterpret_cast<sockaddr*>(&address), length) != 0) {
    int err = errno;
    if ((err != EAGAIN && err != EINTR) || deadline.expired()) {
      close(fd);
      return fail(ncclRemoteError, "fd broker @%s unreachable: %s (its process exited?)", name, strerror(err));
    }
    poll(nullptr, 0, 1);
  }
  ncclResult_t result = ncclSuccess;
  if (!peerIsTrusted(fd)) result = fail(ncclRemoteError, "fd broker @%s runs as another user; not trusted", name);
  Request request;
  request.secret[0] = ticket.secret[0];
  request.secret[1] = ticket.secret[1];
  if (result == ncclSuccess) result = sendAll(fd, &request, sizeof request, deadline);
  if (result == ncclSuccess) result = receiveReply(fd, deadline, name, out, ownerPidfd);
  close(fd);
  return result;
}

}  // namespace weft
