#include "runtime/comm/bootstrap.h"

#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "common/log.h"
#include "common/message_auth.h"
#include "common/settings.h"
#include "common/status.h"
#include "common/stranger_queue.h"
#include "common/tls_session.h"

namespace weft {

namespace {

constexpr uint64_t kChallengeMagic = 0x7765667442434847ull;  // "weftBCHG"
constexpr uint64_t kHelloMagic = 0x776566744248454cull;      // "weftBHEL"
constexpr uint64_t kReplyMagic = 0x7765667442525059ull;      // "weftBRPY"
// Instead of a hello: the rank continues in TLS (WEFT_ENCRYPTION=tls), then sends its hello.
constexpr uint64_t kTlsUpgradeMagic = 0x776566744254534cull;  // "weftBTSL"
// 4: challenge-response (the secret never travels; every message is bound to both nonces).
// 5: a rank may continue in TLS after the challenge.
// 6: RankInfo carries the status server's port.
// 7: RankInfo carries the rails' addresses.
constexpr uint32_t kProtocolVersion = 7;
constexpr int kMaxRanks = 1 << 20;
// Connections a listener holds before they said who they are; beyond it the oldest is dropped,
// so that strangers cannot use up the root's descriptors (or starve the real ranks of them).
constexpr size_t kMaxPending = 128;
constexpr std::string_view kHelloLabel = "weft bootstrap hello v4";
constexpr std::string_view kReplyLabel = "weft bootstrap reply v4";

// The root's first message on every connection: a nonce the rank's hello must be bound to, so
// that a recorded hello is worthless on any other connection.
struct Challenge {
  uint64_t magic;
  uint32_t version;
  uint32_t reserved;
  Nonce rootNonce;
};

struct Hello {
  uint64_t magic;
  uint32_t version;
  int32_t nranks;
  uint32_t infoBytes;
  uint32_t reserved;
  Nonce rankNonce;
  Mac mac;  // over both nonces, nranks and info, keyed by the id's secret
  RankInfo info;
};

struct ReplyHeader {
  uint64_t magic;
  int32_t status;  // ncclResult_t
  int32_t nranks;
  Nonce commNonce;  // the communicator's token and key derive from it and the secret
  Mac mac;          // over both nonces, this header and the table: the root holds the secret
};

Mac helloMac(const BootstrapSecret& secret, const Nonce& rootNonce, const Hello& h) {
  return computeMac(secret.bytes, sizeof(secret.bytes), kHelloLabel,
                    {{&rootNonce, sizeof(rootNonce)},
                     {&h.rankNonce, sizeof(h.rankNonce)},
                     {&h.nranks, sizeof(h.nranks)},
                     {&h.info, sizeof(h.info)}});
}

Mac replyMac(const BootstrapSecret& secret, const Nonce& rankNonce, const Nonce& rootNonce, const ReplyHeader& header,
             const void* table, size_t tableBytes) {
  return computeMac(secret.bytes, sizeof(secret.bytes), kReplyLabel,
                    {{&rankNonce, sizeof(rankNonce)},
                     {&rootNonce, sizeof(rootNonce)},
                     {&header.status, sizeof(header.status)},
                     {&header.nranks, sizeof(header.nranks)},
                     {&header.commNonce, sizeof(header.commNonce)},
                     {table, tableBytes}});
}

// The bootstrap's TLS key and its name, both derived from the id's secret: a root serving
// several ids finds the key by the name a rank's handshake offers.
TlsPsk bootstrapPsk(const BootstrapSecret& secret) {
  TlsPsk psk;
  const MacKey name = deriveKey(secret.bytes, sizeof(secret.bytes), "weft bootstrap tls name", {nullptr, 0});
  static const char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 16; ++i) {
    psk.identity += kHex[name.bytes[i] >> 4];
    psk.identity += kHex[name.bytes[i] & 15];
  }
  psk.key = deriveKey(secret.bytes, sizeof(secret.bytes), "weft bootstrap tls key", {nullptr, 0});
  return psk;
}

// One connection a root listener has accepted but not yet admitted.
struct Pending {
  int fd;
  SocketAddress from;
  Nonce rootNonce;  // the challenge it was sent
  Hello hello;
  size_t got;      // bytes received: the first 8 say hello or TLS, then the hello
  size_t helloAt;  // where the hello starts in what was received (8 after a TLS upgrade)
  Deadline deadline;
  std::unique_ptr<TlsSession> tls;  // after the rank asked for TLS
};

// One unique id's root: the ranks admitted so far, until all nranks are in or the deadline.
class BootstrapRoot {
 public:
  BootstrapRoot(const BootstrapSecret& secret, double timeoutSeconds)
      : secret_(secret),
        tlsPsk_(bootstrapPsk(secret)),
        timeoutSeconds_(timeoutSeconds),
        deadline_(Deadline::after(timeoutSeconds)) {}
  ~BootstrapRoot() {
    for (auto& a : admitted_) {
      a.tls.reset();  // before its fd closes
      close(a.fd);
    }
  }

  // Whether `h` was made with this root's secret for the challenge `rootNonce`.
  bool verifies(const Hello& h, const Nonce& rootNonce) const {
    return macsEqual(h.mac, helloMac(secret_, rootNonce, h));
  }
  const Deadline& deadline() const { return deadline_; }
  bool complete() const { return nranks_ > 0 && static_cast<int>(admitted_.size()) == nranks_; }
  bool expired() const { return deadline_.expired(); }

  // Whether a rank's TLS handshake names this root's key (`*key` then holds it).
  bool tlsKeyNamed(std::string_view identity, MacKey* key) const {
    if (identity != tlsPsk_.identity) return false;
    *key = tlsPsk_.key;
    return true;
  }

  // Takes a connection whose hello proved this root's secret (with its TLS session, if any);
  // false (with the reason) if refused.
  bool admit(int fd, std::unique_ptr<TlsSession>& tls, const Hello& h, const Nonce& rootNonce, const char** reason) {
    if (nranks_ == 0) nranks_ = h.nranks;
    if (h.nranks != nranks_) {
      WEFT_WARN("bootstrap root: rank %d says nranks=%d but the first rank said %d", h.info.rank, h.nranks, nranks_);
      return *reason = "nranks disagrees with the other ranks", false;
    }
    if (h.info.rank < 0 || h.info.rank >= nranks_) return *reason = "rank out of range", false;
    for (const auto& a : admitted_)
      if (a.info.rank == h.info.rank) return *reason = "duplicate rank", false;
    admitted_.push_back({fd, h.info, h.rankNonce, rootNonce, std::move(tls)});
    WEFT_INFO(kLogBootstrap, "bootstrap root: admitted rank %d (%zu/%d)", h.info.rank, admitted_.size(), nranks_);
    return true;
  }

  // Sends every admitted rank the table (or the failure) and closes their connections.
  void finish(bool stopping) {
    ncclResult_t status = complete() ? ncclSuccess : ncclRemoteError;
    if (!complete() && !stopping) {
      if (admitted_.empty())  // an id nobody used: not an error, its resources are simply freed
        WEFT_INFO(kLogBootstrap, "bootstrap root: no rank used this id within WEFT_TIMEOUT (%.0f s)", timeoutSeconds_);
      else
        WEFT_WARN("bootstrap root: only %zu of %d ranks arrived before the WEFT_TIMEOUT deadline (%.0f s)",
                  admitted_.size(), nranks_, timeoutSeconds_);
    }
    ReplyHeader header{kReplyMagic, status, nranks_, {}, {}};
    (void)randomNonce(&header.commNonce);
    std::vector<RankInfo> table(status == ncclSuccess ? nranks_ : 0);
    for (const auto& a : admitted_)
      if (status == ncclSuccess) table[a.info.rank] = a.info;
    const size_t tableBytes = table.size() * sizeof(RankInfo);
    Deadline deadline = Deadline::after(timeoutSeconds_);
    for (auto& a : admitted_) {
      header.mac = replyMac(secret_, a.rankNonce, a.rootNonce, header, table.data(), tableBytes);
      if (a.tls) {
        if (a.tls->writeAll(&header, sizeof(header), deadline, "bootstrap reply") == ncclSuccess && tableBytes)
          (void)a.tls->writeAll(table.data(), tableBytes, deadline, "bootstrap reply");
        a.tls.reset();  // its close_notify, before the fd closes
      } else {
        setNonBlocking(a.fd, false);
        if (sendAll(a.fd, &header, sizeof(header), deadline) == ncclSuccess && tableBytes)
          sendAll(a.fd, table.data(), tableBytes, deadline);
      }
      close(a.fd);
    }
    admitted_.clear();
  }

 private:
  struct Admitted {
    int fd;
    RankInfo info;
    Nonce rankNonce, rootNonce;       // what its reply's MAC is bound to
    std::unique_ptr<TlsSession> tls;  // the reply goes through it when the rank asked for TLS
  };
  BootstrapSecret secret_;
  TlsPsk tlsPsk_;
  double timeoutSeconds_;
  Deadline deadline_;
  int nranks_ = 0;
  std::vector<Admitted> admitted_;
};

// A listening socket and the roots reached through it. Every id from ncclGetUniqueId shares one
// listener (hellos are told apart by their secret); a fixed address (NCCL_COMM_ID) has its own.
struct RootListener {
  int fd = -1;
  SocketAddress requested;  // what the caller asked for (port 0: any)
  SocketAddress bound;
  StrangerQueue<Pending> strangers{"bootstrap root", kLogBootstrap, kMaxPending};
  std::vector<std::unique_ptr<BootstrapRoot>> roots;
  double strangerSeconds = 10;
  std::unique_ptr<TlsContext> tls;  // made when the first rank asks for TLS
};

// Every root of the process, served by one thread that lives while any root does: an id that
// is never used costs no thread of its own and is dropped at its WEFT_TIMEOUT deadline. The
// thread detaches itself when its last root ends (nothing joins a thread that is already done,
// and no finished thread lingers until exit); at exit the destructor stops and joins it.
class RootService {
 public:
  RootService() {
    pthread_atfork(nullptr, nullptr, [] { instance().forgetAfterFork(); });
  }
  ~RootService() {
    std::unique_lock<std::mutex> lock(mutex_);
    stopping_ = true;
    lock.unlock();
    if (thread_.joinable()) thread_.join();
    for (auto& l : listeners_) closeListener(*l, true);
  }

  static RootService& instance() {
    static RootService service;
    return service;
  }

  ncclResult_t add(const SocketAddress& address, const BootstrapSecret& secret, double timeoutSeconds,
                   SocketAddress* bound) {
    std::lock_guard<std::mutex> lock(mutex_);
    RootListener* listener = nullptr;
    if (address.port() == 0)
      for (auto& l : listeners_)
        if (l->requested.length == address.length &&
            memcmp(&l->requested.storage, &address.storage, address.length) == 0)
          listener = l.get();
    if (!listener) {
      auto created = std::make_unique<RootListener>();
      WEFT_CHECK(openListener(address, &created->fd, &created->bound));
      created->requested = address;
      setNonBlocking(created->fd, true);  // accepted in bursts until the queue is empty
      listener = listeners_.emplace_back(std::move(created)).get();
    }
    listener->strangerSeconds = timeoutSeconds < 10 ? timeoutSeconds : 10;
    listener->roots.push_back(std::make_unique<BootstrapRoot>(secret, timeoutSeconds));
    *bound = listener->bound;
    if (!running_) {
      running_ = true;
      thread_ = std::thread([this] { run(); });
    }
    return ncclSuccess;
  }

  size_t rootCount() {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t count = 0;
    for (auto& l : listeners_) count += l->roots.size();
    return count;
  }

 private:
  // A forked child has none of the parent's threads: it must neither join nor stop them.
  void forgetAfterFork() {
    new std::thread(std::move(thread_));  // leaked on purpose: joining a thread that is not there
    new (&mutex_) std::mutex();
    for (auto& l : listeners_) l.release();  // the parent's; leaked with their descriptors
    listeners_.clear();
    running_ = false;
  }

  // WEFT_BOOTSTRAP_FD: a launcher (weftrun) that picked the rendezvous port keeps it bound and
  // listening from before the ranks start, and hands the socket to rank 0. Binding the port
  // here instead would race with any other process taking it after the launcher let it go.
  // Taken once: a later root of this process must not adopt whatever reuses the number.
  static bool adoptInheritedListener(const SocketAddress& address, int* fd, SocketAddress* bound) {
    static std::atomic<bool> taken{false};
    const std::optional<int64_t> inherited = settingIntIfSet(Setting::WeftBootstrapFd);
    if (!inherited || address.port() == 0 || taken.exchange(true)) return false;
    if (adoptListeningSocket(static_cast<int>(*inherited), address, bound) != ncclSuccess) {
      WEFT_WARN("bootstrap root: WEFT_BOOTSTRAP_FD=%lld not used: %s", static_cast<long long>(*inherited),
                lastErrorMessage().c_str());
      return false;
    }
    *fd = static_cast<int>(*inherited);
    WEFT_INFO(kLogBootstrap, "bootstrap root listening on %s (the launcher's socket)", bound->toString().c_str());
    return true;
  }

  static ncclResult_t openListener(const SocketAddress& address, int* fd, SocketAddress* bound) {
    if (adoptInheritedListener(address, fd, bound)) return ncclSuccess;
    ncclResult_t result = listenSocket(address, fd, bound);
    if (result != ncclSuccess && address.port() != 0) {
      // The named host may be an alias of this machine that cannot be bound: take the port on
      // every interface instead; the secret still guards admission.
      SocketAddress any{};
      any.storage.ss_family = address.storage.ss_family;
      any.length = address.length;
      any.setPort(address.port());
      result = listenSocket(any, fd, bound);
    }
    WEFT_CHECK(result);
    WEFT_INFO(kLogBootstrap, "bootstrap root listening on %s", bound->toString().c_str());
    return ncclSuccess;
  }

  static void closeListener(RootListener& l, bool stopping) {
    for (auto& root : l.roots) root->finish(stopping);
    l.roots.clear();
    l.strangers.closeAll();
    closeSocket(l.fd);
  }

  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
      std::vector<pollfd> fds;
      for (auto& l : listeners_) {
        fds.push_back({l->strangers.pollFd(l->fd), POLLIN, 0});
        for (auto& p : l->strangers.pending) fds.push_back({p.fd, POLLIN, 0});
      }
      lock.unlock();  // add() may run meanwhile; it only appends, and the next pass sees it
      poll(fds.data(), fds.size(), 100);
      lock.lock();
      size_t at = 0;
      for (size_t i = 0; i < listeners_.size() && at < fds.size(); ++i) {
        RootListener& l = *listeners_[i];
        bool readable = fds[at].fd == l.fd && (fds[at].revents & POLLIN);
        at += 1 + l.strangers.pending.size();
        if (readable) acceptReady(l);
        for (size_t k = l.strangers.pending.size(); k-- > 0;) readPending(l, k);
      }
      for (size_t i = listeners_.size(); i-- > 0;) {
        RootListener& l = *listeners_[i];
        for (size_t k = l.roots.size(); k-- > 0;) {
          if (!l.roots[k]->complete() && !l.roots[k]->expired()) continue;
          l.roots[k]->finish(false);
          l.roots.erase(l.roots.begin() + k);
        }
        if (l.roots.empty()) {  // nothing left to admit: free the port
          closeListener(l, false);
          listeners_.erase(listeners_.begin() + i);
        }
      }
      if (listeners_.empty()) break;
    }
    running_ = false;
    // Under the lock: add() starts the next thread into thread_ only after this, and the
    // destructor, which set stopping_, joins instead.
    if (!stopping_) thread_.detach();
  }

  // Accepts what is waiting and sends each its challenge.
  static void acceptReady(RootListener& l) {
    l.strangers.acceptReady(l.fd, [&](Pending& p) {
      // One that connects and says nothing is dropped, and never outlives the last root's deadline.
      p.deadline = Deadline::after(l.strangerSeconds);
      Challenge challenge{kChallengeMagic, kProtocolVersion, 0, {}};
      // A fresh socket takes 32 bytes at once, or the peer is gone.
      if (randomNonce(&challenge.rootNonce) != ncclSuccess ||
          send(p.fd, &challenge, sizeof(challenge), MSG_DONTWAIT | MSG_NOSIGNAL) != ssize_t(sizeof(challenge)))
        return false;
      p.rootNonce = challenge.rootNonce;
      return true;
    });
  }

  static void reject(RootListener& l, size_t index, const char* reason) { l.strangers.drop(index, reason); }

  // A rank that asked for TLS: the server's end of its handshake, keyed by whichever root of
  // this listener its handshake names (or the certificates of this process's WEFT_TLS_*).
  static bool startTls(RootListener& l, Pending& p) {
    if (!l.tls) {
      TlsSettings settings;
      if (tlsSettingsFromEnv(&settings) != ncclSuccess || TlsContext::create(settings, &l.tls) != ncclSuccess)
        return false;
    }
    TlsPsk psk;
    psk.find = [&l](std::string_view identity, MacKey* key) {
      for (const auto& root : l.roots)
        if (root->tlsKeyNamed(identity, key)) return true;
      return false;
    };
    return TlsSession::start(p.fd, false, *l.tls, std::move(psk), &p.tls, TlsSession::kExchangeOutboxBytes) ==
           ncclSuccess;
  }

  // Reads what the connection sent so far: 8 bytes that say hello or TLS, then the hello.
  // Returns the reason to drop it, or null (go on waiting, or it was complete: *complete).
  static const char* receive(RootListener& l, Pending& p, bool* complete) {
    *complete = false;
    for (;;) {
      // Never past the first 8 bytes before knowing whether TLS follows them.
      const size_t want = p.got < sizeof(uint64_t) ? sizeof(uint64_t) - p.got : p.helloAt + sizeof(Hello) - p.got;
      char* into = reinterpret_cast<char*>(&p.hello) + (p.got - p.helloAt);
      size_t moved = 0;
      StreamIo io = StreamIo::Moved;
      if (p.tls) {
        io = p.tls->read(into, want, &moved);
        if (p.tls->flush() == StreamIo::Failed) io = StreamIo::Failed;  // its handshake answer
      } else {
        io = recvSome(p.fd, into, want, &moved);
      }
      if (io == StreamIo::Closed) return "closed before its hello was complete";
      if (io == StreamIo::Failed) return p.tls ? "its TLS handshake failed (another key, or not TLS)" : strerror(errno);
      if (io == StreamIo::WouldBlock) return p.deadline.expired() ? "sent no complete hello in time" : nullptr;
      p.got += moved;
      if (p.got == sizeof(uint64_t) && !p.tls && p.hello.magic == kTlsUpgradeMagic) {
        if (!startTls(l, p)) return "TLS could not start here (WEFT_TLS_* of the root's process)";
        p.helloAt = p.got;  // the hello follows, inside TLS
        continue;
      }
      // Check the magic as soon as it is in, so that garbage is refused without waiting.
      if (p.got - p.helloAt >= sizeof(uint64_t) && p.hello.magic != kHelloMagic) return "not a weft bootstrap hello";
      if (p.got - p.helloAt == sizeof(Hello)) {
        *complete = true;
        return nullptr;
      }
    }
  }

  static void readPending(RootListener& l, size_t index) {
    Pending& p = l.strangers.pending[index];
    bool complete = false;
    if (const char* reason = receive(l, p, &complete)) return reject(l, index, reason);
    if (!complete) return;
    const Hello& h = p.hello;
    if (h.version != kProtocolVersion) return reject(l, index, "protocol version mismatch");
    if (h.infoBytes != sizeof(RankInfo)) return reject(l, index, "rank info of the wrong size");
    if (h.nranks < 1 || h.nranks > kMaxRanks) return reject(l, index, "bad rank count");
    BootstrapRoot* root = nullptr;
    for (auto& r : l.roots)
      if (r->verifies(h, p.rootNonce)) root = r.get();
    if (!root) return reject(l, index, "its hello does not prove the id's secret (or answers another challenge)");
    const char* reason = nullptr;
    if (!root->admit(p.fd, p.tls, h, p.rootNonce, &reason)) return reject(l, index, reason);
    l.strangers.release(index);
  }

  std::mutex mutex_;
  std::vector<std::unique_ptr<RootListener>> listeners_;
  std::thread thread_;
  bool running_ = false;
  bool stopping_ = false;
};

// Every field of a peer's record that is used as a length, an index or an address is checked
// once, here, before anything reads it: a rank that holds the secret may still be faulty.
ncclResult_t checkRankRecord(const RankInfo& info, int r) {
  auto malformed = [&](const char* what) {
    return fail(ncclSystemError, "bootstrap: rank %d's record is malformed: %s", r, what);
  };
  if (info.rank != r) return malformed("it names another rank");
  if (memchr(info.hostName, 0, sizeof(info.hostName)) == nullptr) return malformed("host name not terminated");
  if (info.placementBytes > sizeof(info.placement)) return malformed("placement record longer than its field");
  if (info.dataAddressLength > sizeof(info.dataAddress)) return malformed("data address longer than its field");
  if (info.dataAddressLength > 0) {
    const sa_family_t family = info.dataAddress.ss_family;
    const size_t needed = family == AF_INET ? sizeof(sockaddr_in) : family == AF_INET6 ? sizeof(sockaddr_in6) : 0;
    if (needed == 0) return malformed("data address of an unknown family");
    if (info.dataAddressLength < needed) return malformed("data address shorter than its family's");
  }
  return ncclSuccess;
}

}  // namespace

ncclResult_t startBootstrapRoot(const SocketAddress& address, const BootstrapSecret& secret, SocketAddress* bound) {
  return RootService::instance().add(address, secret, settingDouble(Setting::WeftTimeout), bound);
}

size_t liveBootstrapRoots() { return RootService::instance().rootCount(); }

ncclResult_t connectToRoot(const UniqueIdContents& id, double timeoutSeconds, int* fd, SocketAddress* localAddress) {
  ncclResult_t result = connectSocket(id.root, Deadline::after(timeoutSeconds), fd);
  if (result != ncclSuccess)
    return fail(ncclRemoteError, "bootstrap: cannot reach the root at %s within %.0f s (WEFT_TIMEOUT): %s",
                id.root.toString().c_str(), timeoutSeconds, lastErrorMessage().c_str());
  localAddress->length = sizeof(localAddress->storage);
  getsockname(*fd, reinterpret_cast<sockaddr*>(&localAddress->storage), &localAddress->length);
  return ncclSuccess;
}

namespace {
// The rank's end of its bootstrap connection: the socket, or TLS over it once it asked for TLS.
struct RootChannel {
  int fd;
  std::unique_ptr<TlsSession> tls;
  ncclResult_t send(const void* data, size_t bytes, const Deadline& deadline) {
    return tls ? tls->writeAll(data, bytes, deadline, "bootstrap") : sendAll(fd, data, bytes, deadline);
  }
  ncclResult_t receive(void* data, size_t bytes, const Deadline& deadline) {
    return tls ? tls->readAll(data, bytes, deadline, "bootstrap") : recvAll(fd, data, bytes, deadline);
  }
};

// WEFT_ENCRYPTION=tls: asks the root to continue in TLS, keyed from the id's secret (or this
// rank's certificates).
ncclResult_t upgradeToTls(RootChannel* channel, const UniqueIdContents& id, const Deadline& deadline) {
  TlsSettings settings;
  WEFT_CHECK(tlsSettingsFromEnv(&settings));
  if (!settings.enabled) return ncclSuccess;
  std::unique_ptr<TlsContext> context;
  WEFT_CHECK(TlsContext::create(settings, &context));
  const uint64_t upgrade = kTlsUpgradeMagic;
  WEFT_CHECK(sendAll(channel->fd, &upgrade, sizeof(upgrade), deadline));
  setNonBlocking(channel->fd, true);
  return TlsSession::start(channel->fd, true, *context, bootstrapPsk(id.secret), &channel->tls,
                           TlsSession::kExchangeOutboxBytes);
}
}  // namespace

ncclResult_t exchangeRankInfo(int rootFd, const UniqueIdContents& id, int nranks, const RankInfo& mine,
                              double timeoutSeconds, BootstrapResult* result) {
  Deadline deadline = Deadline::after(timeoutSeconds);
  const std::string root = id.root.toString();
  RootChannel channel{rootFd, nullptr};
  Challenge challenge{};
  if (recvAll(rootFd, &challenge, sizeof(challenge), deadline) != ncclSuccess)
    return fail(ncclRemoteError, "bootstrap: rank %d got no challenge from the root at %s within WEFT_TIMEOUT=%.0f s",
                mine.rank, root.c_str(), timeoutSeconds);
  if (challenge.magic != kChallengeMagic)
    return fail(ncclSystemError, "bootstrap: %s is not a weft bootstrap root", root.c_str());
  if (challenge.version != kProtocolVersion)
    return fail(ncclInvalidUsage, "bootstrap: the root at %s speaks protocol %u, this rank %u (mixed weft versions)",
                root.c_str(), challenge.version, kProtocolVersion);
  WEFT_CHECK(upgradeToTls(&channel, id, deadline));
  Hello hello{};
  hello.magic = kHelloMagic;
  hello.version = kProtocolVersion;
  hello.nranks = nranks;
  hello.infoBytes = sizeof(RankInfo);
  hello.info = mine;
  WEFT_CHECK(randomNonce(&hello.rankNonce));
  hello.mac = helloMac(id.secret, challenge.rootNonce, hello);
  ncclResult_t sent = channel.send(&hello, sizeof(hello), deadline);
  ReplyHeader header{};
  if (sent != ncclSuccess || channel.receive(&header, sizeof(header), deadline) != ncclSuccess) {
    if (channel.tls && !channel.tls->handshakeDone())
      return fail(ncclRemoteError,
                  "bootstrap: rank %d: TLS with the root at %s failed (%s): does the root's process use the same "
                  "WEFT_TLS_* certificates, or the same id?",
                  mine.rank, root.c_str(), lastErrorMessage().c_str());
    return fail(ncclRemoteError,
                "bootstrap: rank %d got no answer from the root at %s (rejected, or not all %d ranks arrived within "
                "WEFT_TIMEOUT=%.0f s)",
                mine.rank, root.c_str(), nranks, timeoutSeconds);
  }
  if (header.magic != kReplyMagic || header.nranks != nranks)
    return fail(ncclSystemError, "bootstrap: malformed reply from the root at %s", root.c_str());
  if (header.status == ncclSuccess) {
    result->ranks.resize(nranks);
    WEFT_CHECK(channel.receive(result->ranks.data(), nranks * sizeof(RankInfo), deadline));
  }
  const size_t tableBytes = result->ranks.size() * sizeof(RankInfo);
  if (!macsEqual(header.mac,
                 replyMac(id.secret, hello.rankNonce, challenge.rootNonce, header, result->ranks.data(), tableBytes)))
    return fail(ncclSystemError,
                "bootstrap: the reply from %s does not prove the id's secret: not the real root (or a forged table)",
                root.c_str());
  if (header.status != ncclSuccess)
    return fail(static_cast<ncclResult_t>(header.status),
                "bootstrap: the root gave up before all %d ranks arrived (WEFT_TIMEOUT)", nranks);
  for (int r = 0; r < nranks; ++r) WEFT_CHECK(checkRankRecord(result->ranks[r], r));
  const MacPart commNonce{&header.commNonce, sizeof(header.commNonce)};
  const MacKey token = deriveKey(id.secret.bytes, sizeof(id.secret.bytes), "weft communicator token", commNonce);
  memcpy(result->commToken, token.bytes, sizeof(result->commToken));
  result->commKey = deriveKey(id.secret.bytes, sizeof(id.secret.bytes), "weft communicator key", commNonce);
  return ncclSuccess;
}

}  // namespace weft
