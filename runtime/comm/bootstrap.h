// Bootstrap: how the ranks of a new communicator find each other. The root (started by
// ncclGetUniqueId, or by rank 0 when the id names a fixed address) admits each rank that
// proves it holds the id's secret, collects one RankInfo from every rank, and sends the whole
// table back to all of them. The secret never travels: the root challenges every connection
// with a fresh nonce, the rank's hello carries a MAC over it (common/message_auth.h), and the
// root's reply a MAC over the rank's nonce and the table, so each side knows the other holds
// the secret and a recording is worthless on a new connection. Strangers and garbage are
// rejected and logged; the real ranks carry on.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <vector>

#include "common/message_auth.h"
#include "common/settings_digest.h"
#include "runtime/comm/unique_id.h"
#include "topology/link_model.h"
#include "transport/fd_broker.h"

namespace weft {

constexpr uint32_t kMaxRails = 8;  // NICs a rank's TCP listens on (NCCL_SOCKET_IFNAME)

// A rank's link table (algorithms/cost/cost_model.h: from its machine model, NICs and tuning
// file) as plain numbers, so that all ranks can price schedules with the same terms.
struct LinkTerms {
  double latencyUs[static_cast<size_t>(LinkType::Count)];
  double bandwidthGBps[static_cast<size_t>(LinkType::Count)];
  int32_t nicsPerNode;
  uint32_t tunedMask;  // LinkTable::tunedMask: the terms rank 0's tuning file set
};

// What every rank tells every other rank. Fixed size and plain data: it travels as bytes.
struct RankInfo {
  int32_t rank;
  int32_t pid;
  uint64_t hostHash;
  char hostName[64];
  FdTicket shmSegment;
  int32_t cudaDevice;
  uint32_t dataAddressLength;
  sockaddr_storage dataAddress;  // the peer handshake's listener (transport/peer_handshake.h)
  uint32_t transportsOffered;    // TransportKind bits (transport/transport_table.h)
  // NCCL_SOCKET_IFNAME naming several interfaces: the peer handshake also listens on each (the
  // first is dataAddress), and ranks on other hosts join through the one of this rank's rail
  // (runtime/comm/network_rails.h). 0: none, dataAddress only.
  uint32_t railCount;
  uint32_t railAddressLengths[kMaxRails];
  sockaddr_storage railAddresses[kMaxRails];
  // The status server's TCP port for this communicator, on dataAddress's host (0: none):
  // `weft-info status` reaches ranks on other hosts through it (runtime/status/status_server.h).
  uint16_t statusPort;
  uint16_t reserved;
  // topology/rank_placement.h's record: host, CPU binding, NUMA node, GPU, NIC.
  uint32_t placementBytes;
  uint8_t placement[1024];
  // What shapes schedules and messages, compared at init: the ranksMustAgree settings and the
  // link terms (every rank prices with the slowest of each).
  SettingsDigest settings;
  LinkTerms links;
};

struct BootstrapResult {
  std::vector<RankInfo> ranks;  // indexed by rank
  // Known to this communicator's ranks only: derived from the id's secret and a nonce the
  // root chose. The token marks control messages; the key authenticates connections.
  uint64_t commToken[2];
  MacKey commKey;
};

// Starts a root listening on `address` (port 0: any) that lives until the communicator is
// formed or WEFT_TIMEOUT passes. `bound` receives the actual address. One thread serves every
// root of the process, and ids asked for on the same address share one port; both go away when
// the last root does.
ncclResult_t startBootstrapRoot(const SocketAddress& address, const BootstrapSecret& secret, SocketAddress* bound);
// Roots still waiting for ranks (for tests).
size_t liveBootstrapRoots();

// Connects to the root and exchanges RankInfo. `localAddress` receives the address this host
// used to reach the root (a good default for data listeners).
ncclResult_t connectToRoot(const UniqueIdContents& id, double timeoutSeconds, int* fd, SocketAddress* localAddress);
ncclResult_t exchangeRankInfo(int rootFd, const UniqueIdContents& id, int nranks, const RankInfo& mine,
                              double timeoutSeconds, BootstrapResult* result);

}  // namespace weft
