#include "runtime/comm/bootstrap.h"

#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include "common/log.h"
#include "common/settings.h"
#include "common/status.h"

namespace weft {

namespace {

constexpr uint64_t kHelloMagic = 0x776566744248454cull;  // "weftBHEL"
constexpr uint64_t kReplyMagic = 0x7765667442525059ull;  // "weftBRPY"
constexpr uint32_t kProtocolVersion = 2;                 // 2: RankInfo carries settings and link terms
constexpr int kMaxRanks = 1 << 20;

struct Hello {
  uint64_t magic;
  uint32_t version;
  int32_t nranks;
  BootstrapSecret secret;
  uint32_t infoBytes;
  uint32_t reserved;
  RankInfo info;
};

struct ReplyHeader {
  uint64_t magic;
  int32_t status;  // ncclResult_t
  int32_t nranks;
  uint64_t commToken[2];
};

bool secretsEqual(const BootstrapSecret& a, const BootstrapSecret& b) {
  uint8_t diff = 0;  // constant time: do not leak how many bytes matched
  for (size_t i = 0; i < sizeof(a.bytes); ++i) diff |= a.bytes[i] ^ b.bytes[i];
  return diff == 0;
}

// One connection the root has accepted but not yet admitted.
struct Pending {
  int fd;
  SocketAddress from;
  Hello hello;
  size_t got;
  Deadline deadline;
};

class BootstrapRoot {
 public:
  BootstrapRoot(int listenFd, const BootstrapSecret& secret, double timeoutSeconds)
      : listenFd_(listenFd), secret_(secret), timeoutSeconds_(timeoutSeconds) {}

  void run() {
    Deadline deadline = Deadline::after(timeoutSeconds_);
    while (!complete() && !deadline.expired() && !stopping_.load()) {
      std::vector<pollfd> fds{{listenFd_, POLLIN, 0}};
      for (auto& p : pending_) fds.push_back({p.fd, POLLIN, 0});
      poll(fds.data(), fds.size(), 100);
      if (fds[0].revents & POLLIN) acceptOne();
      for (size_t i = pending_.size(); i-- > 0;) readPending(i);
    }
    if (complete()) {
      reply(ncclSuccess);
    } else {
      if (!stopping_.load())
        WEFT_WARN("bootstrap root: only %zu of %d ranks arrived before the WEFT_TIMEOUT deadline (%.0f s)",
                  admitted_.size(), nranks_, timeoutSeconds_);
      reply(ncclRemoteError);
    }
    for (auto& p : pending_) close(p.fd);
    close(listenFd_);
  }

  void stop() { stopping_.store(true); }

 private:
  bool complete() const { return nranks_ > 0 && static_cast<int>(admitted_.size()) == nranks_; }

  void acceptOne() {
    Pending p{};
    p.from.length = sizeof(p.from.storage);
    p.fd =
        accept4(listenFd_, reinterpret_cast<sockaddr*>(&p.from.storage), &p.from.length, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (p.fd < 0) return;
    // A stranger that connects and says nothing is dropped after a few seconds.
    p.deadline = Deadline::after(timeoutSeconds_ < 10 ? timeoutSeconds_ : 10);
    pending_.push_back(p);
  }

  void reject(size_t index, const char* reason) {
    WEFT_WARN("bootstrap root: rejected connection from %s: %s", pending_[index].from.toString().c_str(), reason);
    close(pending_[index].fd);
    pending_.erase(pending_.begin() + index);
  }

  void readPending(size_t index) {
    Pending& p = pending_[index];
    ssize_t n = recv(p.fd, reinterpret_cast<char*>(&p.hello) + p.got, sizeof(Hello) - p.got, MSG_DONTWAIT);
    if (n == 0) return reject(index, "closed before its hello was complete");
    if (n < 0) {
      if (errno != EAGAIN && errno != EINTR) return reject(index, strerror(errno));
      if (p.deadline.expired()) return reject(index, "sent no complete hello in time");
      return;
    }
    p.got += n;
    // Check the magic as soon as it is in, so that garbage is refused without waiting.
    if (p.got >= sizeof(uint64_t) && p.hello.magic != kHelloMagic) return reject(index, "not a weft bootstrap hello");
    if (p.got < sizeof(Hello)) return;
    const Hello& h = p.hello;
    if (h.version != kProtocolVersion) return reject(index, "protocol version mismatch");
    if (!secretsEqual(h.secret, secret_)) return reject(index, "wrong secret");
    if (h.infoBytes != sizeof(RankInfo)) return reject(index, "rank info of the wrong size");
    if (h.nranks < 1 || h.nranks > kMaxRanks) return reject(index, "bad rank count");
    if (nranks_ == 0) nranks_ = h.nranks;
    if (h.nranks != nranks_) {
      WEFT_WARN("bootstrap root: rank %d says nranks=%d but the first rank said %d", h.info.rank, h.nranks, nranks_);
      return reject(index, "nranks disagrees with the other ranks");
    }
    if (h.info.rank < 0 || h.info.rank >= nranks_) return reject(index, "rank out of range");
    for (const auto& a : admitted_)
      if (a.info.rank == h.info.rank) return reject(index, "duplicate rank");
    admitted_.push_back({p.fd, h.info});
    WEFT_INFO(kLogBootstrap, "bootstrap root: admitted rank %d (%zu/%d) from %s", h.info.rank, admitted_.size(),
              nranks_, p.from.toString().c_str());
    pending_.erase(pending_.begin() + index);
  }

  void reply(ncclResult_t status) {
    ReplyHeader header{kReplyMagic, status, nranks_, {0, 0}};
    BootstrapSecret token{};
    randomSecret(&token);
    memcpy(header.commToken, token.bytes, sizeof(header.commToken));
    std::vector<RankInfo> table(nranks_ > 0 ? nranks_ : 0);
    for (const auto& a : admitted_) table[a.info.rank] = a.info;
    Deadline deadline = Deadline::after(timeoutSeconds_);
    for (const auto& a : admitted_) {
      setNonBlocking(a.fd, false);
      if (sendAll(a.fd, &header, sizeof(header), deadline) == ncclSuccess && status == ncclSuccess)
        sendAll(a.fd, table.data(), table.size() * sizeof(RankInfo), deadline);
      close(a.fd);
    }
  }

  struct Admitted {
    int fd;
    RankInfo info;
  };
  int listenFd_;
  BootstrapSecret secret_;
  double timeoutSeconds_;
  int nranks_ = 0;
  std::vector<Pending> pending_;
  std::vector<Admitted> admitted_;
  std::atomic<bool> stopping_{false};
};

class RootRegistry;
RootRegistry& rootRegistry();

// Root threads are joined at process exit so that none runs during static destruction.
class RootRegistry {
 public:
  RootRegistry() {
    pthread_atfork(nullptr, nullptr, [] { rootRegistry().forgetAfterFork(); });
  }
  // A forked child has none of the parent's threads: it must neither join nor stop them.
  void forgetAfterFork() {
    new std::vector<std::thread>(std::move(threads_));  // leaked on purpose
    threads_.clear();
    for (auto& r : roots_) r.release();
    roots_.clear();
  }
  void add(std::unique_ptr<BootstrapRoot> root) {
    std::lock_guard<std::mutex> lock(mutex_);
    BootstrapRoot* raw = root.get();
    roots_.push_back(std::move(root));
    threads_.emplace_back([raw] { raw->run(); });
  }
  ~RootRegistry() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& r : roots_) r->stop();
    for (auto& t : threads_) t.join();
  }

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<BootstrapRoot>> roots_;
  std::vector<std::thread> threads_;
};

RootRegistry& rootRegistry() {
  static RootRegistry registry;
  return registry;
}

}  // namespace

ncclResult_t startBootstrapRoot(const SocketAddress& address, const BootstrapSecret& secret, SocketAddress* bound) {
  int fd = -1;
  ncclResult_t result = listenSocket(address, &fd, bound);
  if (result != ncclSuccess && address.port() != 0) {
    // The named host may be an alias of this machine that cannot be bound: take the port on
    // every interface instead; the secret still guards admission.
    SocketAddress any{};
    any.storage.ss_family = address.storage.ss_family;
    any.length = address.length;
    any.setPort(address.port());
    result = listenSocket(any, &fd, bound);
  }
  WEFT_CHECK(result);
  WEFT_INFO(kLogBootstrap, "bootstrap root listening on %s", bound->toString().c_str());
  double timeout = settingDouble(Setting::WeftTimeout);
  rootRegistry().add(std::make_unique<BootstrapRoot>(fd, secret, timeout));
  return ncclSuccess;
}

ncclResult_t connectToRoot(const UniqueIdContents& id, double timeoutSeconds, int* fd, SocketAddress* localAddress) {
  ncclResult_t result = connectSocket(id.root, Deadline::after(timeoutSeconds), fd);
  if (result != ncclSuccess)
    return fail(ncclRemoteError, "bootstrap: cannot reach the root at %s within %.0f s (WEFT_TIMEOUT): %s",
                id.root.toString().c_str(), timeoutSeconds, lastErrorMessage().c_str());
  localAddress->length = sizeof(localAddress->storage);
  getsockname(*fd, reinterpret_cast<sockaddr*>(&localAddress->storage), &localAddress->length);
  return ncclSuccess;
}

ncclResult_t exchangeRankInfo(int rootFd, const UniqueIdContents& id, int nranks, const RankInfo& mine,
                              double timeoutSeconds, BootstrapResult* result) {
  Deadline deadline = Deadline::after(timeoutSeconds);
  Hello hello{};
  hello.magic = kHelloMagic;
  hello.version = kProtocolVersion;
  hello.nranks = nranks;
  hello.secret = id.secret;
  hello.infoBytes = sizeof(RankInfo);
  hello.info = mine;
  ncclResult_t sent = sendAll(rootFd, &hello, sizeof(hello), deadline);
  ReplyHeader header{};
  if (sent != ncclSuccess || recvAll(rootFd, &header, sizeof(header), deadline) != ncclSuccess)
    return fail(ncclRemoteError,
                "bootstrap: rank %d got no answer from the root at %s (rejected, or not all %d ranks arrived within "
                "WEFT_TIMEOUT=%.0f s)",
                mine.rank, id.root.toString().c_str(), nranks, timeoutSeconds);
  if (header.magic != kReplyMagic || header.nranks != nranks)
    return fail(ncclSystemError, "bootstrap: malformed reply from the root");
  if (header.status != ncclSuccess)
    return fail(static_cast<ncclResult_t>(header.status),
                "bootstrap: the root gave up before all %d ranks arrived (WEFT_TIMEOUT)", nranks);
  result->ranks.resize(nranks);
  WEFT_CHECK(recvAll(rootFd, result->ranks.data(), nranks * sizeof(RankInfo), deadline));
  memcpy(result->commToken, header.commToken, sizeof(result->commToken));
  for (int r = 0; r < nranks; ++r)
    if (result->ranks[r].rank != r) return fail(ncclSystemError, "bootstrap: rank table entry %d is corrupt", r);
  return ncclSuccess;
}

}  // namespace weft
