// TCP transport between hosts (or on loopback when forced). One socket per peer pair,
// opened by the lower rank, authenticated with the communicator's token. Messages are framed
// (length + magic), staged through per-connection rings allocated once, and moved by
// non-blocking I/O from the executor's progress loop.
#pragma once

#include <map>
#include <memory>

#include "common/socket.h"
#include "transport/transport.h"

namespace weft {

struct TcpToken {
  uint64_t words[2];
};

class TcpTransport {
 public:
  ~TcpTransport();
  // Listens on `address` (port 0 picks one); the bound address is what peers connect to.
  ncclResult_t init(const SocketAddress& address, int rank, const TcpToken& token, double timeoutSeconds);
  const SocketAddress& address() const { return bound_; }
  // The communicator's token, known only after bootstrap; hellos without it are refused.
  void setToken(const TcpToken& token) { token_ = token; }
  // Both ranks of a pair call this; the lower rank connects, the higher accepts.
  ncclResult_t connect(int peerRank, const SocketAddress& peerAddress, std::unique_ptr<Connection>* out);

 private:
  ncclResult_t acceptFrom(int peerRank, int* fd);

  int listenFd_ = -1;
  SocketAddress bound_;
  int rank_ = -1;
  TcpToken token_{};
  double timeoutSeconds_ = 0;
  std::map<int, int> acceptedByRank_;  // connections that arrived before we asked for them
};

}  // namespace weft
