// The transport table: one row per transport, in preference order. The communicator asks
// each row in turn whether it can join two ranks and connects through the first that both
// ranks offer and that can (shared memory on one host; verbs, then UCX, then TCP between
// hosts). WEFT_TRANSPORT names the row for same-host peers, WEFT_NET / NCCL_NET the row for
// peers on other hosts. The connection contract test runs against every row.
//
// Adding a transport: implement Transport and Connection (transport/transport.h) in
// transport/NAME/, read its settings once in its constructor, give it a TransportKind bit and
// a row here (in transport_table.cc); network transports meet their peers through the
// PeerHandshake (transport/peer_handshake.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "transport/transport.h"

namespace weft {

// One bit per transport, the same in every build: what a rank offers travels as these bits.
enum TransportKind : uint32_t {
  kTransportShm = 1u << 0,
  kTransportTcp = 1u << 1,
  kTransportUcx = 1u << 2,
  kTransportIbverbs = 1u << 3,
};

struct TransportEntry {
  const char* name;  // as WEFT_TRANSPORT / WEFT_NET spell it: "shm", "tcp", "ucx", "ib"
  TransportKind kind;
  bool peersShareMemory;                   // connected ranks can map each other's buffers (same host)
  bool betweenHosts;                       // reaches peers on other hosts (WEFT_NET chooses among these)
  bool encrypts;                           // runs TLS under WEFT_ENCRYPTION=tls (only these go between hosts then)
  std::unique_ptr<Transport> (*create)();  // reads the transport's settings
  // Whether this machine lets a rank offer it (an RDMA device for verbs), with the reason when
  // not; null: wherever it is built. Cheap, and starts no thread.
  bool (*offeredHere)(std::string* why);
};

// Every transport built in, most preferred first.
const std::vector<TransportEntry>& transportTable();
// The row called `name`, or null.
const TransportEntry* findTransport(const char* name);

}  // namespace weft
