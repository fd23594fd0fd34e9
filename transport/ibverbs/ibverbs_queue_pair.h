// One RC queue pair to one peer, with what it owns: a completion queue on its own completion
// channel (the fd a sleeping rank polls), and the send and receive rings registered once with
// ibv_reg_mr. It implements RdmaQueue (rdma_queue.h) with RDMA writes with immediate.
#pragma once

#include <infiniband/verbs.h>

#include <memory>
#include <vector>

#include "transport/ibverbs/ibverbs_device.h"
#include "transport/ibverbs/rdma_connection.h"
#include "transport/ibverbs/rdma_queue.h"
#include "transport/transport.h"

namespace weft {

// What the two sides swap through the peer handshake to join their queue pairs. Plain data.
struct VerbsEndpointInfo {
  uint32_t queuePairNumber;
  uint32_t packetSequence;
  uint16_t lid;
  uint8_t ethernet;
  uint8_t mtu;  // ibv_mtu
  uint8_t gid[16];
  uint64_t receiveRing;  // address of the receive ring, for RDMA writes
  uint32_t receiveKey;   // its rkey
  uint32_t slotBytes;
  uint32_t slots;
  uint32_t reserved;
};

// The QP attributes NCCL lets users set: NCCL_IB_TIMEOUT, NCCL_IB_RETRY_CNT, NCCL_IB_TC, NCCL_IB_SL.
struct VerbsQpSettings {
  int timeout;
  int retryCount;
  int trafficClass;
  int serviceLevel;
  static VerbsQpSettings fromEnv();
};

class VerbsQueuePair : public RdmaQueue {
 public:
  static ncclResult_t create(std::shared_ptr<IbDevice> device, const RingGeometry& geometry,
                             std::unique_ptr<VerbsQueuePair>* out);
  ~VerbsQueuePair() override;

  VerbsEndpointInfo localInfo() const;
  // INIT -> RTR -> RTS towards the peer's queue pair; the receives must be posted before the
  // peer is told this side is ready.
  ncclResult_t connectTo(const VerbsEndpointInfo& peer, const VerbsQpSettings& settings, int peerRank);
  RdmaRings rings() const;

  ncclResult_t postWrite(uint64_t id, const void* local, size_t bytes, uint64_t remoteOffset,
                         uint32_t immediate) override;
  ncclResult_t postReceive(uint64_t id) override;
  ncclResult_t poll(RdmaCompletion* out, int capacity, int* count) override;
  int eventFd() const override { return channel_ ? channel_->fd : -1; }
  bool armEvents() override;

 private:
  VerbsQueuePair() = default;
  void acknowledgeEvents();

  std::shared_ptr<IbDevice> device_;
  RingGeometry geometry_{};
  char* memory_ = nullptr;  // send ring, then receive ring
  size_t memoryBytes_ = 0;
  ibv_mr* sendRegion_ = nullptr;
  ibv_mr* receiveRegion_ = nullptr;
  ibv_comp_channel* channel_ = nullptr;
  ibv_cq* completions_ = nullptr;
  ibv_qp* queuePair_ = nullptr;
  uint32_t packetSequence_ = 0;
  uint64_t remoteRing_ = 0;
  uint32_t remoteKey_ = 0;
  size_t remoteRingBytes_ = 0;
  unsigned unacknowledgedEvents_ = 0;
  std::vector<RdmaCompletion> stashed_;  // polled while arming, not yet handed out
  size_t stashedHead_ = 0;
};

}  // namespace weft
