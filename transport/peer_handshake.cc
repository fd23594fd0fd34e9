#include "transport/peer_handshake.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "common/log.h"
#include "common/status.h"
#include "common/stranger_queue.h"

namespace weft {

namespace {

constexpr uint64_t kChallengeMagic = 0x7765667448534b43ull;  // "weftHSKC"
constexpr uint64_t kHelloMagic = 0x7765667448534b32ull;      // "weftHSK2"
constexpr uint64_t kAcceptMagic = 0x7765667448534b41ull;     // "weftHSKA"
constexpr uint32_t kSwapMagic = 0x77667453;                  // "wftS"
constexpr size_t kMaxPending = 64;
constexpr std::string_view kHelloLabel = "weft peer hello";
constexpr std::string_view kAcceptLabel = "weft peer accept";

struct Challenge {
  uint64_t magic;
  Nonce nonce;
};

struct Hello {
  uint64_t magic;
  int32_t fromRank;
  int32_t toRank;
  uint32_t transportTag;
  uint32_t stream;
  Nonce nonce;
  Mac mac;  // over both nonces and the fields above, keyed by the communicator's key
};

struct Accept {
  uint64_t magic;
  Mac mac;  // over both nonces (the other way round) and the hello's fields
};

struct SwapHeader {
  uint32_t magic;
  uint32_t bytes;
};

Mac macOf(const MacKey& key, std::string_view label, const Nonce& first, const Nonce& second, const Hello& h) {
  return computeMac(key, label,
                    {{&first, sizeof(first)},
                     {&second, sizeof(second)},
                     {&h.fromRank, sizeof(h.fromRank)},
                     {&h.toRank, sizeof(h.toRank)},
                     {&h.transportTag, sizeof(h.transportTag)},
                     {&h.stream, sizeof(h.stream)}});
}

}  // namespace

PeerHandshake::~PeerHandshake() {
  for (int& fd : listenFds_) closeSocket(fd);
  for (auto& [key, fd] : accepted_) close(fd);
}

ncclResult_t PeerHandshake::listen(const SocketAddress& where, int rank, double timeoutSeconds, SocketAddress* bound) {
  std::vector<SocketAddress> addresses;
  WEFT_CHECK(listen(std::vector<SocketAddress>{where}, rank, timeoutSeconds, &addresses));
  *bound = addresses.front();
  return ncclSuccess;
}

ncclResult_t PeerHandshake::listen(const std::vector<SocketAddress>& where, int rank, double timeoutSeconds,
                                   std::vector<SocketAddress>* bound) {
  rank_ = rank;
  timeoutSeconds_ = timeoutSeconds;
  bound->clear();
  for (const SocketAddress& address : where) {
    SocketAddress any = address;
    any.setPort(0);
    int fd = -1;
    bound->emplace_back();
    WEFT_CHECK(listenSocket(any, &fd, &bound->back()));
    setNonBlocking(fd, true);  // accepted in bursts until the queue is empty
    listenFds_.push_back(fd);
  }
  strangers_ = std::make_unique<StrangerQueue<Pending>>("rank " + std::to_string(rank), kLogNet, kMaxPending);
  return ncclSuccess;
}

void PeerHandshake::setKey(const MacKey& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  key_ = key;
  keySet_ = true;
}

// Accepts what is waiting and sends each its challenge.
void PeerHandshake::acceptReady(int listenFd, const Deadline& deadline) {
  strangers_->acceptReady(listenFd, [&](Pending& p) {
    // A stranger gets a short deadline for its hello, never past the caller's.
    const double helloSeconds = timeoutSeconds_ < 5 ? timeoutSeconds_ : 5;
    p.deadline = Deadline::after(helloSeconds);
    if (deadline.millisecondsLeft() < p.deadline.millisecondsLeft()) p.deadline = deadline;
    Challenge challenge{kChallengeMagic, {}};
    if (randomNonce(&challenge.nonce) != ncclSuccess ||
        send(p.fd, &challenge, sizeof(challenge), MSG_DONTWAIT | MSG_NOSIGNAL) != ssize_t(sizeof(challenge)))
      return false;
    p.challenge = challenge.nonce;
    return true;
  });
}

// Reads what pending connection `index` has sent; a complete, proven hello moves it to accepted_.
void PeerHandshake::readHello(size_t index) {
  static_assert(sizeof(Hello) <= sizeof(Pending::hello));
  Pending& p = strangers_->pending[index];
  ssize_t n = recv(p.fd, p.hello + p.got, sizeof(Hello) - p.got, MSG_DONTWAIT);
  if (n == 0) return strangers_->drop(index, "closed before its hello was complete");
  if (n < 0) {
    if (errno != EAGAIN && errno != EINTR) return strangers_->drop(index, strerror(errno));
    if (p.deadline.expired()) return strangers_->drop(index, "sent no complete hello in time");
    return;
  }
  p.got += static_cast<size_t>(n);
  Hello hello{};
  memcpy(&hello, p.hello, p.got < sizeof(hello) ? p.got : sizeof(hello));
  if (p.got >= sizeof(uint64_t) && hello.magic != kHelloMagic) return strangers_->drop(index, "not a weft peer hello");
  if (p.got < sizeof(Hello)) return;
  // Only lower ranks join this one; the MAC proves the key and binds every field to this challenge.
  if (hello.toRank != rank_ || hello.fromRank < 0 || hello.fromRank >= rank_)
    return strangers_->drop(index, "a hello for another rank pair");
  if (!keySet_ || !macsEqual(hello.mac, macOf(key_, kHelloLabel, p.challenge, hello.nonce, hello)))
    return strangers_->drop(index, "its hello does not prove the communicator's key (or answers another challenge)");
  Accept accept{kAcceptMagic, macOf(key_, kAcceptLabel, hello.nonce, p.challenge, hello)};
  const int fd = strangers_->release(index);
  setNonBlocking(fd, false);
  if (sendAll(fd, &accept, sizeof(accept), Deadline::after(timeoutSeconds_)) != ncclSuccess) {
    close(fd);
    return;
  }
  tuneConnection(fd);
  const Key arrived{hello.fromRank, hello.transportTag, hello.stream};
  if (auto it = accepted_.find(arrived); it != accepted_.end()) close(it->second);  // a retry replaces it
  accepted_[arrived] = fd;
}

ncclResult_t PeerHandshake::acceptFor(const Key& key, int* fd) {
  const Deadline deadline = Deadline::after(timeoutSeconds_);
  for (;;) {
    if (auto it = accepted_.find(key); it != accepted_.end()) {
      *fd = it->second;
      accepted_.erase(it);
      return ncclSuccess;
    }
    if (deadline.expired())
      return fail(ncclRemoteError, "rank %d never connected (waited %.0f s, WEFT_TIMEOUT)", std::get<0>(key),
                  timeoutSeconds_);
    // The listeners first, then the strangers that have yet to prove themselves.
    std::vector<pollfd> fds;
    for (int listenFd : listenFds_) fds.push_back({strangers_->pollFd(listenFd), POLLIN, 0});
    const size_t listeners = fds.size();
    for (const auto& p : strangers_->pending) fds.push_back({p.fd, POLLIN, 0});
    if (poll(fds.data(), fds.size(), deadline.millisecondsLeft(100)) < 0 && errno != EINTR)
      return fail(ncclSystemError, "peer handshake: poll failed: %s", strerror(errno));
    for (size_t i = strangers_->pending.size(); i-- > 0;)
      if (fds[listeners + i].revents || strangers_->pending[i].deadline.expired()) readHello(i);
    for (size_t l = 0; l < listeners; ++l)
      if (fds[l].fd >= 0 && (fds[l].revents & POLLIN)) acceptReady(fds[l].fd, deadline);
  }
}

ncclResult_t PeerHandshake::join(int peerRank, const SocketAddress& peerAddress, uint32_t transportTag, uint32_t stream,
                                 int* fd) {
  *fd = -1;
  std::lock_guard<std::mutex> lock(mutex_);
  if (listenFds_.empty()) return fail(ncclInternalError, "peer handshake: rank %d is not listening", rank_);
  if (!keySet_) return fail(ncclInternalError, "peer handshake: rank %d has no communicator key yet", rank_);
  if (rank_ > peerRank) return acceptFor(Key{peerRank, transportTag, stream}, fd);
  const Deadline deadline = Deadline::after(timeoutSeconds_);
  int s = -1;
  WEFT_CHECK(connectSocket(peerAddress, deadline, &s));
  CloseSocketOnExit closer{s};
  Challenge challenge{};
  WEFT_CHECK(recvAll(s, &challenge, sizeof(challenge), deadline));
  if (challenge.magic != kChallengeMagic)
    return fail(ncclSystemError, "peer handshake: %s (rank %d's address) is not a weft peer listener",
                peerAddress.toString().c_str(), peerRank);
  Hello hello{kHelloMagic, rank_, peerRank, transportTag, stream, {}, {}};
  WEFT_CHECK(randomNonce(&hello.nonce));
  hello.mac = macOf(key_, kHelloLabel, challenge.nonce, hello.nonce, hello);
  WEFT_CHECK(sendAll(s, &hello, sizeof(hello), deadline));
  Accept accept{};
  if (recvAll(s, &accept, sizeof(accept), deadline) != ncclSuccess)
    return fail(ncclRemoteError, "peer handshake: rank %d at %s refused this rank's hello (or died)", peerRank,
                peerAddress.toString().c_str());
  if (accept.magic != kAcceptMagic ||
      !macsEqual(accept.mac, macOf(key_, kAcceptLabel, hello.nonce, challenge.nonce, hello)))
    return fail(ncclSystemError,
                "peer handshake: the listener at %s does not prove the communicator's key: not rank %d",
                peerAddress.toString().c_str(), peerRank);
  *fd = s;
  s = -1;  // handed over
  return ncclSuccess;
}

ncclResult_t PeerHandshake::swap(int fd, int peerRank, const void* mine, size_t bytes, size_t maxBytes,
                                 double timeoutSeconds, std::vector<uint8_t>* theirs) {
  const Deadline deadline = Deadline::after(timeoutSeconds);
  SwapHeader header{kSwapMagic, static_cast<uint32_t>(bytes)};
  WEFT_CHECK(sendAll(fd, &header, sizeof(header), deadline));
  WEFT_CHECK(sendAll(fd, mine, bytes, deadline));
  SwapHeader peer{};
  WEFT_CHECK(recvAll(fd, &peer, sizeof(peer), deadline));
  if (peer.magic != kSwapMagic || peer.bytes > maxBytes)
    return fail(ncclSystemError,
                "peer handshake: rank %d sent a bad address record (magic %08x, %u bytes, at most %zu)", peerRank,
                peer.magic, peer.bytes, maxBytes);
  theirs->resize(peer.bytes);
  return recvAll(fd, theirs->data(), peer.bytes, deadline);
}

}  // namespace weft
