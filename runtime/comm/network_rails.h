// TCP rails: with several NICs per host (NCCL_SOCKET_IFNAME naming several interfaces), every
// rank's peer handshake listens on each of them, and a rank on another host joins this rank
// through the NIC of this rank's rail, its local rank mod the NICs (the rails of
// topology/rank_layout.h). The ranks of a host then receive on different NICs, and the
// channels of a ring, which cross each node boundary into a different local rank
// (algorithms/builders/channels.h), use different NICs; the NIC count becomes the cost model's
// NICs per node unless a tuning file set it. Pairs on one host are not affected.
#pragma once

#include <string>
#include <vector>

#include "common/socket.h"
#include "nccl.h"
#include "runtime/comm/bootstrap.h"

namespace weft {

// The rails among the interfaces NCCL_SOCKET_IFNAME matched (findInterfaceAddresses): the
// first kMaxRails in name order, so that rail k is the same NIC on every host, when there are
// two or more; otherwise none (one data address).
std::vector<NamedAddress> railsAmong(std::vector<NamedAddress> interfaces);

// The order rails are taken in: by name, runs of digits by value ("eth2" before "eth10").
bool railNameBefore(const std::string& a, const std::string& b);

// Records the listeners' addresses (bound[i] on rail i) in this rank's bootstrap record.
void publishRails(const std::vector<SocketAddress>& bound, RankInfo* info);

// Where a rank joins `peer`, whose local rank is `peerLocalRank`: its rail's listener, or its
// one data address when it has no rails (*rail = -1 then).
SocketAddress joinAddressOf(const RankInfo& peer, int peerLocalRank, int* rail);

// "eth0 198.18.1.1, eth1 198.18.2.1", for the logs.
std::string describeRails(const std::vector<NamedAddress>& rails);

}  // namespace weft
