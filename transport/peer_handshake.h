// How network transports meet a peer. A communicator listens on one socket, whose address
// travels in the bootstrap table (TransportEndpoint::dataAddress). To join a peer, the lower
// rank of the pair connects to the higher rank's listener and sends a hello carrying the
// communicator's token, both ranks, the transport's tag and a stream number; the higher rank
// accepts it only with the right token. TCP keeps the joined socket as its data connection;
// UCX and verbs swap their addresses (worker address, queue pair numbers) over it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "common/socket.h"
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
  // The communicator's secret, known only after bootstrap: hellos without it are refused.
  void setToken(const uint64_t token[2]);
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
  ncclResult_t acceptFor(const Key& key, int* fd);

  std::mutex mutex_;  // transports may join on several threads of one rank
  int listenFd_ = -1;
  int rank_ = -1;
  double timeoutSeconds_ = 0;
  uint64_t token_[2] = {0, 0};
  std::map<Key, int> accepted_;  // connections that arrived before this rank asked for them
};

}  // namespace weft
