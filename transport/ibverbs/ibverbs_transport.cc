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
// The port this rank would offer verbs on, unless NCCL_IB_DISABLE=1 or none is found (*why).
bool portToOffer(IbPortChoice* port, std::string* why) {
  if (settingBool(Setting::NcclIbDisable)) {
    *why = "NCCL_IB_DISABLE=1";
    return false;
  }
  return chooseIbPort(port, why);
}
}  // namespace

bool IbverbsTransport::offeredHere(std::string* why) {
  IbPortChoice port;
  return portToOffer(&port, why);
}

ncclResult_t IbverbsTransport::listen(const TransportSetup& setup, TransportEndpoint* /*mine*/) {
  if (!setup.handshake) return fail(ncclInternalError, "ibverbs: no peer handshake to meet peers through");
  handshake_ = setup.handshake;
  std::string why;
  offered_ = portToOffer(&port_, &why);
  if (offered_)
    WEFT_INFO(kLogNet, "ibverbs: offering %s port %d", port_.device.c_str(), port_.port);
  else
    WEFT_INFO(kLogNet, "ibverbs: not offered (%s)", why.c_str());
  return ncclSuccess;
}

bool IbverbsTransport::canConnect(const TransportEndpoint& /*self*/, const TransportEndpoint& peer) const {
  return offered_ && handshake_ && peer.dataAddress.length > 0;
}

ncclResult_t IbverbsTransport::connect(const TransportEndpoint& peer, std::unique_ptr<Connection>* out) {
  if (!device_) WEFT_CHECK(IbDevice::open(port_, &device_));
  std::unique_ptr<VerbsQueuePair> queuePair;
  WEFT_CHECK(VerbsQueuePair::create(device_, settings_, &queuePair));
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
  WEFT_INFO(kLogNet, "ibverbs: connected to rank %d over %s port %d (QP %u -> %u, %s)", peer.rank,
            device_->name().c_str(), device_->port(), mine.queuePairNumber, peerInfo.queuePairNumber,
            device_->ethernet() ? "RoCE" : "InfiniBand");
  *out = std::move(connection);
  return ncclSuccess;
}

}  // namespace weft
