#include "transport/ibverbs/ibverbs_queue_pair.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "common/settings.h"
#include "common/status.h"

namespace weft {

namespace {
constexpr int kQueueDepthPerSlot = 2;  // a write per slot plus a credit, with room to spare
}  // namespace

VerbsQpSettings VerbsQpSettings::fromEnv() {
  return VerbsQpSettings{
      static_cast<int>(settingInt(Setting::NcclIbTimeout)), static_cast<int>(settingInt(Setting::NcclIbRetryCnt)),
      static_cast<int>(settingInt(Setting::NcclIbTc)), static_cast<int>(settingInt(Setting::NcclIbSl))};
}

ncclResult_t VerbsQueuePair::create(std::shared_ptr<IbDevice> device, const RingGeometry& geometry,
                                    std::unique_ptr<VerbsQueuePair>* out) {
  std::unique_ptr<VerbsQueuePair> made(new VerbsQueuePair);
  made->device_ = std::move(device);
  made->geometry_ = geometry;
  const char* name = made->device_->name().c_str();
  // Both rings in one mapping, faulted in now: never a first touch on the data path.
  made->memoryBytes_ = 2 * geometry.slotBytes * geometry.slots;
  void* memory =
      mmap(nullptr, made->memoryBytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (memory == MAP_FAILED)
    return fail(ncclSystemError, "ibverbs: cannot allocate rings of %zu bytes: %s", made->memoryBytes_,
                strerror(errno));
  made->memory_ = static_cast<char*>(memory);
  const size_t ringBytes = geometry.slotBytes * geometry.slots;
  made->sendRegion_ = ibv_reg_mr(made->device_->protectionDomain(), made->memory_, ringBytes, IBV_ACCESS_LOCAL_WRITE);
  made->receiveRegion_ = ibv_reg_mr(made->device_->protectionDomain(), made->memory_ + ringBytes, ringBytes,
                                    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (!made->sendRegion_ || !made->receiveRegion_)
    return fail(ncclSystemError, "ibverbs: ibv_reg_mr of %zu bytes on %s failed: %s", ringBytes, name, strerror(errno));
  made->channel_ = ibv_create_comp_channel(made->device_->context());
  if (!made->channel_)
    return fail(ncclSystemError, "ibverbs: ibv_create_comp_channel on %s failed: %s", name, strerror(errno));
  // Non-blocking: progress drains its events without ever waiting on it.
  fcntl(made->channel_->fd, F_SETFL, fcntl(made->channel_->fd, F_GETFL) | O_NONBLOCK);
  const int depth =
      static_cast<int>(RdmaConnection::receivesToPost(geometry.slots)) + kQueueDepthPerSlot * geometry.slots;
  made->completions_ = ibv_create_cq(made->device_->context(), 2 * depth, nullptr, made->channel_, 0);
  if (!made->completions_)
    return fail(ncclSystemError, "ibverbs: ibv_create_cq of %d entries on %s failed: %s", 2 * depth, name,
                strerror(errno));
  ibv_qp_init_attr init{};
  init.send_cq = made->completions_;
  init.recv_cq = made->completions_;
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = static_cast<uint32_t>(depth);
  init.cap.max_recv_wr = RdmaConnection::receivesToPost(geometry.slots);
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  made->queuePair_ = ibv_create_qp(made->device_->protectionDomain(), &init);
  if (!made->queuePair_) return fail(ncclSystemError, "ibverbs: ibv_create_qp on %s failed: %s", name, strerror(errno));
  ibv_qp_attr attributes{};
  attributes.qp_state = IBV_QPS_INIT;
  attributes.pkey_index = 0;
  attributes.port_num = static_cast<uint8_t>(made->device_->port());
  attributes.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  if (ibv_modify_qp(made->queuePair_, &attributes,
                    IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0)
    return fail(ncclSystemError, "ibverbs: moving a queue pair on %s to INIT failed: %s", name, strerror(errno));
  made->packetSequence_ = std::random_device{}() & 0xffffff;
  if (ibv_req_notify_cq(made->completions_, 0) != 0)
    return fail(ncclSystemError, "ibverbs: ibv_req_notify_cq on %s failed: %s", name, strerror(errno));
  *out = std::move(made);
  return ncclSuccess;
}

VerbsQueuePair::~VerbsQueuePair() {
  if (queuePair_) ibv_destroy_qp(queuePair_);
  if (completions_) {
    acknowledgeEvents();
    if (unacknowledgedEvents_) ibv_ack_cq_events(completions_, unacknowledgedEvents_);
    ibv_destroy_cq(completions_);
  }
  if (channel_) ibv_destroy_comp_channel(channel_);
  if (sendRegion_) ibv_dereg_mr(sendRegion_);
  if (receiveRegion_) ibv_dereg_mr(receiveRegion_);
  if (memory_) munmap(memory_, memoryBytes_);
}

VerbsEndpointInfo VerbsQueuePair::localInfo() const {
  VerbsEndpointInfo info{};
  info.queuePairNumber = queuePair_->qp_num;
  info.packetSequence = packetSequence_;
  info.lid = device_->lid();
  info.ethernet = device_->ethernet() ? 1 : 0;
  info.mtu = static_cast<uint8_t>(device_->activeMtu());
  memcpy(info.gid, device_->gid().raw, sizeof(info.gid));
  info.receiveRing = reinterpret_cast<uint64_t>(receiveRegion_->addr);
  info.receiveKey = receiveRegion_->rkey;
  info.slotBytes = static_cast<uint32_t>(geometry_.slotBytes);
  info.slots = geometry_.slots;
  return info;
}

RdmaRings VerbsQueuePair::rings() const {
  return RdmaRings{memory_, memory_ + geometry_.slotBytes * geometry_.slots, geometry_.slotBytes, geometry_.slots};
}

ncclResult_t VerbsQueuePair::connectTo(const VerbsEndpointInfo& peer, const VerbsQpSettings& settings, int peerRank) {
  if (peer.slotBytes != geometry_.slotBytes || peer.slots != geometry_.slots)
    return fail(ncclInvalidUsage,
                "ibverbs: rank %d's rings are %u x %u bytes, this rank's %u x %zu (WEFT_IB_SLOT_BYTES "
                "and WEFT_IB_SLOTS must agree)",
                peerRank, peer.slots, peer.slotBytes, geometry_.slots, geometry_.slotBytes);
  if (peer.ethernet != (device_->ethernet() ? 1 : 0))
    return fail(ncclInvalidUsage, "ibverbs: rank %d's port is %s, this rank's %s: they cannot be joined", peerRank,
                peer.ethernet ? "RoCE" : "InfiniBand", device_->ethernet() ? "RoCE" : "InfiniBand");
  remoteRing_ = peer.receiveRing;
  remoteKey_ = peer.receiveKey;
  remoteRingBytes_ = static_cast<size_t>(peer.slotBytes) * peer.slots;
  const char* name = device_->name().c_str();

  ibv_qp_attr rtr{};
  rtr.qp_state = IBV_QPS_RTR;
  rtr.path_mtu = static_cast<ibv_mtu>(std::min<int>(peer.mtu, device_->activeMtu()));
  rtr.dest_qp_num = peer.queuePairNumber;
  rtr.rq_psn = peer.packetSequence;
  rtr.max_dest_rd_atomic = 1;
  rtr.min_rnr_timer = 12;
  rtr.ah_attr.port_num = static_cast<uint8_t>(device_->port());
  rtr.ah_attr.sl = static_cast<uint8_t>(settings.serviceLevel);
  if (peer.ethernet) {  // RoCE routes by GID
    rtr.ah_attr.is_global = 1;
    memcpy(rtr.ah_attr.grh.dgid.raw, peer.gid, sizeof(peer.gid));
    rtr.ah_attr.grh.sgid_index = static_cast<uint8_t>(device_->gidIndex());
    rtr.ah_attr.grh.hop_limit = 255;
    rtr.ah_attr.grh.traffic_class = static_cast<uint8_t>(settings.trafficClass);
  } else {
    rtr.ah_attr.dlid = peer.lid;
  }
  if (ibv_modify_qp(queuePair_, &rtr,
                    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0)
    return fail(ncclSystemError, "ibverbs: moving the queue pair to rank %d on %s to RTR failed: %s", peerRank, name,
                strerror(errno));
  ibv_qp_attr rts{};
  rts.qp_state = IBV_QPS_RTS;
  rts.timeout = static_cast<uint8_t>(settings.timeout);
  rts.retry_cnt = static_cast<uint8_t>(settings.retryCount);
  rts.rnr_retry = 7;  // infinite: a receive is always re-posted, a little later at worst
  rts.sq_psn = packetSequence_;
  rts.max_rd_atomic = 1;
  if (ibv_modify_qp(queuePair_, &rts,
                    IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                        IBV_QP_MAX_QP_RD_ATOMIC) != 0)
    return fail(ncclSystemError, "ibverbs: moving the queue pair to rank %d on %s to RTS failed: %s", peerRank, name,
                strerror(errno));
  return ncclSuccess;
}

ncclResult_t VerbsQueuePair::postWrite(uint64_t id, const void* local, size_t bytes, uint64_t remoteOffset,
                                       uint32_t immediate) {
  if (remoteOffset + bytes > remoteRingBytes_)
    return fail(ncclInternalError, "ibverbs: a write of %zu bytes at %llu is outside the peer's ring of %zu bytes",
                bytes, static_cast<unsigned long long>(remoteOffset), remoteRingBytes_);
  ibv_sge piece{};
  piece.addr = reinterpret_cast<uint64_t>(local);
  piece.length = static_cast<uint32_t>(bytes);
  piece.lkey = sendRegion_->lkey;
  ibv_send_wr request{};
  request.wr_id = id;
  request.sg_list = bytes ? &piece : nullptr;
  request.num_sge = bytes ? 1 : 0;
  request.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  request.send_flags = IBV_SEND_SIGNALED;
  request.imm_data = htonl(immediate);
  request.wr.rdma.remote_addr = remoteRing_ + remoteOffset;
  request.wr.rdma.rkey = remoteKey_;
  ibv_send_wr* bad = nullptr;
  const int error = ibv_post_send(queuePair_, &request, &bad);
  if (error != 0) return fail(ncclSystemError, "ibverbs: ibv_post_send failed: %s", strerror(error));
  return ncclSuccess;
}

ncclResult_t VerbsQueuePair::postReceive(uint64_t id) {
  ibv_recv_wr request{};
  request.wr_id = id;
  request.num_sge = 0;  // a write with immediate carries its data in the write, not here
  ibv_recv_wr* bad = nullptr;
  const int error = ibv_post_recv(queuePair_, &request, &bad);
  if (error != 0) return fail(ncclSystemError, "ibverbs: ibv_post_recv failed: %s", strerror(error));
  return ncclSuccess;
}

namespace {
RdmaCompletion completionOf(const ibv_wc& done) {
  RdmaCompletion c{};
  // A failed completion's opcode is undefined; either kind then fails the connection.
  c.kind = done.opcode == IBV_WC_RECV_RDMA_WITH_IMM ? RdmaCompletion::Arrived : RdmaCompletion::WriteDone;
  c.id = done.wr_id;
  c.immediate = ntohl(done.imm_data);
  c.ok = done.status == IBV_WC_SUCCESS;
  c.error = c.ok ? nullptr : ibv_wc_status_str(done.status);
  return c;
}
}  // namespace

ncclResult_t VerbsQueuePair::poll(RdmaCompletion* out, int capacity, int* count) {
  *count = 0;
  while (*count < capacity && stashedHead_ < stashed_.size()) out[(*count)++] = stashed_[stashedHead_++];
  if (stashedHead_ == stashed_.size()) {
    stashed_.clear();
    stashedHead_ = 0;
  }
  ibv_wc done[32];
  while (*count < capacity) {
    const int n = ibv_poll_cq(completions_, std::min(capacity - *count, 32), done);
    if (n < 0) return fail(ncclSystemError, "ibverbs: ibv_poll_cq failed");
    for (int i = 0; i < n; ++i) out[(*count)++] = completionOf(done[i]);
    if (n < 32) break;
  }
  return ncclSuccess;
}

// Takes the channel's pending events (non-blocking) so that its fd stops being readable.
void VerbsQueuePair::acknowledgeEvents() {
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  while (ibv_get_cq_event(channel_, &cq, &context) == 0) ++unacknowledgedEvents_;
  if (unacknowledgedEvents_ >= 64) {
    ibv_ack_cq_events(completions_, unacknowledgedEvents_);
    unacknowledgedEvents_ = 0;
  }
}

bool VerbsQueuePair::armEvents() {
  // Events come only after arming: take the last sleep's here, not on every poll (a syscall).
  acknowledgeEvents();
  if (!stashed_.empty()) return false;
  if (ibv_req_notify_cq(completions_, 0) != 0) return false;
  // A completion that landed before the request raises no event: look once more, and keep
  // what is found for the next poll().
  ibv_wc done[32];
  const int n = ibv_poll_cq(completions_, 32, done);
  for (int i = 0; i < n; ++i) stashed_.push_back(completionOf(done[i]));
  return n <= 0;
}

}  // namespace weft
