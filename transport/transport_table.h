// The transport table: one row per transport, in preference order. The communicator asks
// each row in turn whether it can join two ranks and connects through the first that can
// (shared memory before TCP on one host; TCP between hosts); WEFT_TRANSPORT names a row to
// force for same-host peers. The connection contract test runs against every row.
//
// Adding a transport: implement Transport and Connection (transport/transport.h) in
// transport/NAME/, read its settings once in its constructor, add a row here (in
// transport_table.cc), and publish anything peers need in TransportEndpoint.
#pragma once

#include <memory>
#include <vector>

#include "transport/transport.h"

namespace weft {

struct TransportEntry {
  const char* name;                        // as WEFT_TRANSPORT spells it: "shm", "tcp"
  bool peersShareMemory;                   // connected ranks can map each other's buffers (same host)
  std::unique_ptr<Transport> (*create)();  // reads the transport's settings
};

// Every transport, most preferred first.
const std::vector<TransportEntry>& transportTable();
// The row called `name`, or null.
const TransportEntry* findTransport(const char* name);

}  // namespace weft
