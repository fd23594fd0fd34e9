#include "transport/ibverbs/ibverbs_transport.h"

#include <cstring>

#include "common/log.h"
#include "common/settings.h"
#include "common/status.h"
#include "transport/ibverbs/ibverbs_queue_pair.h"
#include "transport/ibverbs/rdma_connection.h"

namespace weft {

namespace {
constexpr uint32_t kIbverbsTransportTag = 0x49425630;  // "IBV0", in the peer handshake

}  // namespace

IbverbsSettings IbverbsTransport::settingsFromEnv() {
  return ringGeometryFromEnv(Setting::WeftIbSlotBytes, Setting::WeftIbSlots);
}

IbverbsTransport::IbverbsTransport(const IbverbsSettings& settings) : settings_(settings) {}

namespace {
// The ports this rank would offer verbs on, unless NCCL_IB_DISABLE=1 or none is found (*why).
bool portsToOffer(std::vector<IbPortChoice>* ports, std::string* why) {
  if (settingBool(Setting::NcclIbDisable)) {
    *why = "NCCL_IB_DISABLE=1";
    return false;
  }
  return chooseIbPorts(ports, why);
}
}  // namespace

bool IbverbsTransport::offeredHere(std::string* why) {
  std::vector<IbPortChoice> ports;
  return portsToOffer(&ports, why);
}

ncclResult_t IbverbsTransport::listen(const TransportSetup& setup, TransportEndpoint* /*mine*/) {
  if (!setup.handshake) return fail(ncclInternalError, "ibverbs: no peer handshake to meet peers through");
  handshake_ = setup.handshake;
  std::string why;
  offered_ = portsToOffer(&ports_, &why);
  devices_.assign(ports_.size(), nullptr);
  if (offered_)
    for (const IbPortChoice& port : ports_)
      WEFT_INFO(kLogNet, "ibverbs: offering %s port %d", port.device.c_str(), port.port);
  else
    WEFT_INFO(kLogNet, "ibverbs: not offered (%s)", why.c_str());
  return ncclSuccess;
}

bool IbverbsTransport::canConnect(const TransportEndpoint& /*self*/, const TransportEndpoint& peer) const {
  return offered_ && handshake_ && peer.dataAddress.length > 0;
}

ncclResult_t IbverbsTransport::connect(const TransportEndpoint& peer, std::unique_ptr<Connection>* out) {
  // Several ports: the pair's rail (the higher rank's local rank) picks one at each end, as the
  // TCP rails pick NICs (runtime/comm/network_rails.h); each device is opened when first used.
  const size_t rail = peer.railLocalRank >= 0 ? static_cast<size_t>(peer.railLocalRank) % ports_.size() : 0;
  std::shared_ptr<IbDevice>& device = devices_[rail];
  if (!device) WEFT_CHECK(IbDevice::open(ports_[rail], &device));
  std::unique_ptr<VerbsQueuePair> queuePair;
  WEFT_CHECK(VerbsQueuePair::create(device, settings_, &queuePair));
  int fd = -1;
  WEFT_CHECK(handshake_->join(peer.rank, peer.dataAddress, kIbverbsTransportTag, 0, &fd));
  CloseSocketOnExit closer{fd};
  const double timeout = handshake_->timeoutSeconds();
  const VerbsEndpointInfo mine = queuePair->localInfo();
  std::vector<uint8_t> theirs;
  WEFT_CHECK(PeerHandshake::swap(fd, peer.rank, &mine, sizeof(mine), sizeof(VerbsEndpointInfo), timeout, &theirs));
  if (theirs.size() != sizeof(VerbsEndpointInfo))
    return fail(ncclSystemError, "ibverbs: rank %d sent a queue pair record of %zu bytes", peer.rank, theirs.size());
  VerbsEndpointInfo peerInfo;
  memcpy(&peerInfo, theirs.data(), sizeof(peerInfo));
  WEFT_CHECK(queuePair->connectTo(peerInfo, VerbsQpSettings::fromEnv(), peer.rank));
  const RdmaRings rings = queuePair->rings();
  auto connection = std::make_unique<RdmaConnection>(std::move(queuePair), rings, peer.rank, "ibverbs");
  // Receives first, then tell the peer: it writes only after hearing that this side is ready.
  WEFT_CHECK(connection->start());
  const char ready = 'R';
  char peerReady = 0;
  WEFT_CHECK(sendAll(fd, &ready, 1, Deadline::after(timeout)));
  WEFT_CHECK(recvAll(fd, &peerReady, 1, Deadline::after(timeout)));
  if (peerReady != ready) return fail(ncclRemoteError, "ibverbs: rank %d did not get ready", peer.rank);
  WEFT_INFO(kLogNet, "ibverbs: connected to rank %d over %s port %d, rail %zu of %zu (QP %u -> %u, %s)", peer.rank,
            device->name().c_str(), device->port(), rail, ports_.size(), mine.queuePairNumber, peerInfo.queuePairNumber,
            device->ethernet() ? "RoCE" : "InfiniBand");
  *out = std::move(connection);
  return ncclSuccess;
}

}  // namespace weft
