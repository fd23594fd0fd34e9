// How network transports meet a peer. A communicator listens on one socket, whose address
// travels in the bootstrap table (TransportEndpoint::dataAddress). To join a peer, the lower
// rank of the pair connects to the higher rank's listener; the listener sends a fresh nonce,
// the joining rank answers with a hello (both ranks, the transport's tag, a stream number and
// a nonce of its own) and a MAC over all of it keyed by the communicator's key, and the
// accepting rank answers with a MAC of its own over both nonces: each side knows the other
// holds the key, which never travels, and a recording is worthless on a new connection.
// Strangers are handled side by side, never one after another, and at most kMaxPending at a
// time. TCP keeps the joined socket as its data connection; UCX and verbs swap their addresses
// (worker address, queue pair numbers) over it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <tuple>
#include <vector>

#include "common/deadline.h"
#include "common/message_auth.h"
#include "common/socket.h"
#include "common/stranger_queue.h"
#include "nccl.h"

namespace weft {

class PeerHandshake {
 public:
  PeerHandshake() = default;
  PeerHandshake(const PeerHandshake&) = delete;
  PeerHandshake& operator=(const PeerHandshake&) = delete;
  ~PeerHandshake();

  // Listens on `where` (any port); `bound` receives the address peers connect to.
  ncclResult_t listen(const SocketAddress& where, int rank, double timeoutSeconds, SocketAddress* bound);
  // Listens on each of `where` (one socket each, any port: a host's NICs, runtime/comm/
  // network_rails.h); bound[i] receives where[i]'s address with its port. Peers may join
  // through any of them.
  ncclResult_t listen(const std::vector<SocketAddress>& where, int rank, double timeoutSeconds,
                      std::vector<SocketAddress>* bound);
  // The communicator's key (runtime/comm/bootstrap.h), known only after bootstrap: a joining
  // rank must prove it holds it, and the accepting rank proves it back.
  void setKey(const MacKey& key);
  // A key for one purpose (`label`) derived from the communicator's key: TLS's pre-shared key.
  MacKey derivedKey(std::string_view label) const {
    return deriveKey(key_.bytes, sizeof(key_.bytes), label, {nullptr, 0});
  }
  int rank() const { return rank_; }
  double timeoutSeconds() const { return timeoutSeconds_; }

  // A connected socket to `peerRank` (listening at `peerAddress`) for the transport tagged
  // `transportTag`, its `stream`-th (several sockets to one peer are told apart by it). Both
  // ranks call it; it waits up to the time-out for the peer.
  ncclResult_t join(int peerRank, const SocketAddress& peerAddress, uint32_t transportTag, uint32_t stream, int* fd);

  // Sends `mine` (its length first) and receives the peer's, at most `maxBytes`, on a joined
  // socket, within `timeoutSeconds`.
  static ncclResult_t swap(int fd, int peerRank, const void* mine, size_t bytes, size_t maxBytes, double timeoutSeconds,
                           std::vector<uint8_t>* theirs);

 private:
  using Key = std::tuple<int, uint32_t, uint32_t>;  // peer rank, transport tag, stream
  // A connection accepted but not yet proven: the challenge it was sent and its hello so far.
  struct Pending {
    int fd;
    SocketAddress from;
    Nonce challenge;
    uint8_t hello[128];
    size_t got;
    Deadline deadline;
  };
  ncclResult_t acceptFor(const Key& key, int* fd);
  void acceptReady(int listenFd, const Deadline& deadline);
  void readHello(size_t index);

  std::mutex mutex_;  // transports may join on several threads of one rank
  std::vector<int> listenFds_;
  int rank_ = -1;
  double timeoutSeconds_ = 0;
  MacKey key_{};
  bool keySet_ = false;
  std::unique_ptr<StrangerQueue<Pending>> strangers_;  // made by listen()
  std::map<Key, int> accepted_;                        // connections that arrived before this rank asked for them
};

}  // namespace weft
