#include "tests/support/transport_side.h"

#include <unistd.h>

#include "common/socket.h"
#include "common/status.h"

namespace weft::testing {

ncclResult_t listenOnLoopback(const TransportEntry& entry, int rank, const MacKey& key, double timeoutSeconds,
                              TransportSide* side) {
  SocketAddress loopback;
  WEFT_CHECK(parseSocketAddress("127.0.0.1", "test", &loopback));
  side->handshake = std::make_unique<PeerHandshake>();
  WEFT_CHECK(side->handshake->listen(loopback, rank, timeoutSeconds, &side->endpoint.dataAddress));
  side->handshake->setKey(key);
  TransportSetup setup;
  setup.rank = rank;
  setup.nranks = 2;
  setup.timeoutSeconds = timeoutSeconds;
  setup.handshake = side->handshake.get();
  side->transport = entry.create();
  side->endpoint.rank = rank;
  side->endpoint.pid = getpid();
  side->endpoint.hostHash = 0x686f7374;  // "host": one for both sides
  WEFT_CHECK(side->transport->listen(setup, &side->endpoint));
  side->endpoint.offered |= entry.kind;
  return ncclSuccess;
}

}  // namespace weft::testing
