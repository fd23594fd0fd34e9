#include "transport/transport_table.h"

#include <cstring>

#include "transport/shm/shm_transport.h"
#include "transport/tcp/tcp_transport.h"

namespace weft {

namespace {
// A transport with the settings it reads (once, here) from the environment.
template <class T>
std::unique_ptr<Transport> create() {
  return std::make_unique<T>(T::settingsFromEnv());
}
}  // namespace

const std::vector<TransportEntry>& transportTable() {
  static const std::vector<TransportEntry> table = {
      {"shm", true, create<ShmTransport>},
      {"tcp", false, create<TcpTransport>},
  };
  return table;
}

const TransportEntry* findTransport(const char* name) {
  for (const TransportEntry& entry : transportTable())
    if (strcmp(entry.name, name) == 0) return &entry;
  return nullptr;
}

}  // namespace weft
