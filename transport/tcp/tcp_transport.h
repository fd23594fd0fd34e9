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

struct TcpSettings {
  size_t slotBytes;
  uint32_t slots;
};

class TcpTransport : public Transport {
 public:
  // WEFT_TCP_SLOT_BYTES (default 512 KiB) and WEFT_TCP_SLOTS (default 8).
  static TcpSettings settingsFromEnv();

  explicit TcpTransport(const TcpSettings& settings) : settings_(settings) {}
  ~TcpTransport() override;

  // Listens on setup.dataAddress (any port); the bound address is what peers connect to.
  ncclResult_t listen(const TransportSetup& setup, TransportEndpoint* mine) override;
  // The communicator's token, known only after bootstrap; hellos without it are refused.
  void setCommToken(const uint64_t token[2]) override { token_ = TcpToken{{token[0], token[1]}}; }
  bool canConnect(const TransportEndpoint& self, const TransportEndpoint& peer) const override;
  // The lower rank of the pair connects, the higher accepts.
  ncclResult_t connect(const TransportEndpoint& peer, std::unique_ptr<Connection>* out) override;
  size_t maxMessageBytes() const override { return settings_.slotBytes; }

 private:
  ncclResult_t acceptFrom(int peerRank, int* fd);

  TcpSettings settings_;
  int listenFd_ = -1;
  SocketAddress bound_;
  int rank_ = -1;
  TcpToken token_{};
  double timeoutSeconds_ = 0;
  std::map<int, int> acceptedByRank_;  // connections that arrived before we asked for them
};

}  // namespace weft
