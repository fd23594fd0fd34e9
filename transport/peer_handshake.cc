#include "transport/peer_handshake.h"

#include <unistd.h>

#include <cstring>

#include "common/log.h"
#include "common/status.h"

namespace weft {

namespace {

constexpr uint64_t kHelloMagic = 0x7765667448534b31ull;  // "weftHSK1"
constexpr uint32_t kSwapMagic = 0x77667453;              // "wftS"

struct Hello {
  uint64_t magic;
  uint64_t token[2];
  int32_t fromRank;
  int32_t toRank;
  uint32_t transportTag;
  uint32_t stream;
};

struct SwapHeader {
  uint32_t magic;
  uint32_t bytes;
};

}  // namespace

PeerHandshake::~PeerHandshake() {
  closeSocket(listenFd_);
  for (auto& [key, fd] : accepted_) close(fd);
}

ncclResult_t PeerHandshake::listen(const SocketAddress& where, int rank, double timeoutSeconds, SocketAddress* bound) {
  rank_ = rank;
  timeoutSeconds_ = timeoutSeconds;
  SocketAddress any = where;
  any.setPort(0);
  return listenSocket(any, &listenFd_, bound);
}

void PeerHandshake::setToken(const uint64_t token[2]) {
  std::lock_guard<std::mutex> lock(mutex_);
  memcpy(token_, token, sizeof(token_));
}

ncclResult_t PeerHandshake::acceptFor(const Key& key, int* fd) {
  const Deadline deadline = Deadline::after(timeoutSeconds_);
  for (;;) {
    if (auto it = accepted_.find(key); it != accepted_.end()) {
      *fd = it->second;
      accepted_.erase(it);
      return ncclSuccess;
    }
    int s = -1;
    SocketAddress from;
    if (acceptSocket(listenFd_, deadline, &s, &from) != ncclSuccess)
      return fail(ncclRemoteError, "rank %d never connected (waited %.0f s, WEFT_TIMEOUT)", std::get<0>(key),
                  timeoutSeconds_);
    Hello hello{};
    // A stranger gets a short deadline for its hello so that it cannot stall the real peers.
    const double helloTimeout = timeoutSeconds_ < 5 ? timeoutSeconds_ : 5;
    if (recvAll(s, &hello, sizeof(hello), Deadline::after(helloTimeout)) != ncclSuccess || hello.magic != kHelloMagic ||
        memcmp(hello.token, token_, sizeof(token_)) != 0 || hello.toRank != rank_) {
      WEFT_WARN("rejected a connection from %s: bad hello (wrong communicator token or not weft)",
                from.toString().c_str());
      close(s);
      continue;
    }
    const Key arrived{hello.fromRank, hello.transportTag, hello.stream};
    if (auto it = accepted_.find(arrived); it != accepted_.end()) close(it->second);  // a retry replaces it
    accepted_[arrived] = s;
  }
}

ncclResult_t PeerHandshake::join(int peerRank, const SocketAddress& peerAddress, uint32_t transportTag, uint32_t stream,
                                 int* fd) {
  *fd = -1;
  std::lock_guard<std::mutex> lock(mutex_);
  if (listenFd_ < 0) return fail(ncclInternalError, "peer handshake: rank %d is not listening", rank_);
  if (rank_ > peerRank) return acceptFor(Key{peerRank, transportTag, stream}, fd);
  int s = -1;
  WEFT_CHECK(connectSocket(peerAddress, Deadline::after(timeoutSeconds_), &s));
  Hello hello{kHelloMagic, {token_[0], token_[1]}, rank_, peerRank, transportTag, stream};
  ncclResult_t result = sendAll(s, &hello, sizeof(hello), Deadline::after(timeoutSeconds_));
  if (result != ncclSuccess) {
    close(s);
    return result;
  }
  *fd = s;
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
