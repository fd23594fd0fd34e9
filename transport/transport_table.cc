#include "transport/transport_table.h"

#include <cstring>

#include "transport/shm/shm_transport.h"
#include "transport/tcp/tcp_transport.h"
#ifdef WEFT_HAVE_IBVERBS
#include "transport/ibverbs/ibverbs_transport.h"
#endif
#ifdef WEFT_HAVE_UCX
#include "transport/ucx/ucx_transport.h"
#endif

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
      {"shm", kTransportShm, true, false, false, create<ShmTransport>, nullptr},
#ifdef WEFT_HAVE_IBVERBS
      {"ib", kTransportIbverbs, false, true, false, create<IbverbsTransport>, IbverbsTransport::offeredHere},
#endif
#ifdef WEFT_HAVE_UCX
      {"ucx", kTransportUcx, false, true, false, create<UcxTransport>, nullptr},
#endif
      {"tcp", kTransportTcp, false, true, true, create<TcpTransport>, nullptr},
  };
  return table;
}

const TransportEntry* findTransport(const char* name) {
  for (const TransportEntry& entry : transportTable())
    if (strcmp(entry.name, name) == 0) return &entry;
  return nullptr;
}

}  // namespace weft
