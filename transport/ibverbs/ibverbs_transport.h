// RDMA verbs transport between hosts (InfiniBand or RoCE; libibverbs from rdma-core). A rank
// offers it when NCCL_IB_DISABLE is not set and NCCL_IB_HCA allows an active port
// (ibverbs_device.h). Per peer: one RC queue pair and registered rings (ibverbs_queue_pair.h),
// their numbers, LID/GID and ring keys swapped through the communicator's PeerHandshake, and
// the protocol of rdma_connection.h on top (writes with immediate, credits).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "transport/ibverbs/ibverbs_device.h"
#include "transport/transport.h"

namespace weft {

using IbverbsSettings = RingGeometry;

class IbverbsTransport : public Transport {
 public:
  // WEFT_IB_SLOT_BYTES (default 512 KiB) and WEFT_IB_SLOTS (default 8).
  static IbverbsSettings settingsFromEnv();
  explicit IbverbsTransport(const IbverbsSettings& settings);
  // Whether this rank may offer verbs: NCCL_IB_DISABLE unset and an active port NCCL_IB_HCA allows.
  static bool offeredHere(std::string* why);

  // Finds the allowed active ports (not opened until a peer needs one).
  ncclResult_t listen(const TransportSetup& setup, TransportEndpoint* mine) override;
  bool offered() const override { return offered_; }
  bool canConnect(const TransportEndpoint& self, const TransportEndpoint& peer) const override;
  ncclResult_t connect(const TransportEndpoint& peer, std::unique_ptr<Connection>* out) override;
  size_t maxMessageBytes() const override { return settings_.slotBytes; }

 private:
  IbverbsSettings settings_;
  bool offered_ = false;
  std::vector<IbPortChoice> ports_;  // every allowed active port; a pair uses its rail's
  PeerHandshake* handshake_ = nullptr;
  std::vector<std::shared_ptr<IbDevice>> devices_;  // by port, opened when a pair first needs it
};

}  // namespace weft
