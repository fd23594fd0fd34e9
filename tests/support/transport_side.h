// One rank's side of a transport pair inside a test process: its peer handshake listening on
// loopback (it outlives the transport), its instance of a transport table row, and the endpoint
// it published. Both sides of a pair claim one host, as two ranks on one machine do.
#pragma once

#include <memory>

#include "transport/peer_handshake.h"
#include "transport/transport_table.h"

namespace weft::testing {

struct TransportSide {
  std::unique_ptr<PeerHandshake> handshake;  // outlives the transport
  std::unique_ptr<Transport> transport;
  TransportEndpoint endpoint;
};

// Listens as rank `rank` of 2 through `entry`, the handshake keyed with `key`.
ncclResult_t listenOnLoopback(const TransportEntry& entry, int rank, const MacKey& key, double timeoutSeconds,
                              TransportSide* side);

}  // namespace weft::testing
