// TCP transport between hosts (or on loopback when forced). One socket per peer pair, joined
// through the communicator's PeerHandshake (so authenticated with its token). Messages are framed
// (length + magic), staged through per-connection rings allocated once, and moved by
// non-blocking I/O from the executor's progress loop; with WEFT_ENCRYPTION=tls, through TLS 1.3
// (common/tls_session.h), keyed from the communicator's key or from certificates.
#pragma once

#include <cstdint>
#include <memory>

#include "common/socket.h"
#include "common/tls_session.h"
#include "transport/transport.h"

namespace weft {

struct TcpSettings {
  size_t slotBytes;
  uint32_t slots;
  uint32_t socketsPerPeer = 1;  // above 1: a striped connection (transport/tcp/striped_tcp_connection.h)
  uint32_t helperThreads = 1;   // above 1: that many threads move a striped connection's sockets
};

// The connection over an already joined socket `fd` (owned from now on), without TLS: what
// connect() makes, exposed for the frame parser's fuzz target (tests/fuzz/fuzz_tcp_frames.cc).
std::unique_ptr<Connection> makeTcpConnection(int fd, int peerRank, const TcpSettings& settings);

constexpr int kMaxSocketsPerPeer = 64;

class TcpTransport : public Transport {
 public:
  // WEFT_TCP_SLOT_BYTES (default 512 KiB), WEFT_TCP_SLOTS (default 8), the sockets per peer,
  // NCCL_NSOCKS_PERTHREAD x NCCL_SOCKET_NTHREADS (default 1, at most 64, as NCCL caps it), and
  // the helper threads that move them, NCCL_SOCKET_NTHREADS (1: the caller's thread does).
  static TcpSettings settingsFromEnv();

  explicit TcpTransport(const TcpSettings& settings) : settings_(settings) {}

  // Peers connect through setup.handshake; with WEFT_ENCRYPTION=tls, loads the TLS context.
  ncclResult_t listen(const TransportSetup& setup, TransportEndpoint* mine) override;
  bool canConnect(const TransportEndpoint& self, const TransportEndpoint& peer) const override;
  // The sockets the handshake joined become the connection: one, or several striped (never
  // under TLS).
  ncclResult_t connect(const TransportEndpoint& peer, std::unique_ptr<Connection>* out) override;
  size_t maxMessageBytes() const override { return settings_.slotBytes; }

 private:
  // Stream `stream` of the pair, joined through the handshake, its congestion control set.
  ncclResult_t joinDataSocket(const TransportEndpoint& peer, uint32_t stream, int* fd);
  ncclResult_t connectOne(const TransportEndpoint& peer, std::unique_ptr<Connection>* out);
  ncclResult_t connectStriped(const TransportEndpoint& peer, std::unique_ptr<Connection>* out);

  TcpSettings settings_;
  PeerHandshake* handshake_ = nullptr;
  std::unique_ptr<TlsContext> tls_;  // WEFT_ENCRYPTION=tls
};

}  // namespace weft
