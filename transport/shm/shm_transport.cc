#include "transport/shm/shm_transport.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "common/settings.h"
#include "common/status.h"

namespace weft {

namespace {

void ringDoorbell(ShmSegmentHeader* owner) {
  // Pairs with the sleeper's store to `sleeping` and its re-check: whichever comes second sees
  // the other, so a wake-up is never lost.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (owner->sleeping.load(std::memory_order_relaxed)) {
    owner->doorbell.fetch_add(1, std::memory_order_release);
    futexWake(&owner->doorbell);
  }
}

class ShmConnection : public Connection {
 public:
  ShmConnection(ShmSegment* own, std::unique_ptr<ShmSegment> peer, int ownLocal, int peerLocal)
      : own_(own), peer_(std::move(peer)), ownLocal_(ownLocal), peerLocal_(peerLocal) {
    sendRing_ = peer_->ring(ownLocal_);
    recvRing_ = own_->ring(peerLocal_);
    sendSlots_ = peer_->header()->slots;
    sendSlotBytes_ = peer_->header()->slotBytes;
    recvSlots_ = own_->header()->slots;
    sendTail_ = sendRing_->tail.load(std::memory_order_relaxed);
    recvHead_ = recvRing_->head.load(std::memory_order_relaxed);
  }

  const char* transportName() const override { return "SHM"; }
  size_t maxMessageBytes() const override { return sendSlotBytes_; }

  void* sendBuffer(size_t bytes) override {
    if (sendTail_ - cachedSendHead_ >= sendSlots_) {
      cachedSendHead_ = sendRing_->head.load(std::memory_order_acquire);
      if (sendTail_ - cachedSendHead_ >= sendSlots_) return nullptr;
    }
    return peer_->slot(ownLocal_, sendTail_ % sendSlots_);
  }

  ncclResult_t sendCommit(size_t bytes) override {
    sendRing_->sizes[sendTail_ % sendSlots_] = bytes;
    sendRing_->tail.store(++sendTail_, std::memory_order_release);
    ringDoorbell(peer_->header());
    return ncclSuccess;
  }

  ncclResult_t recvPeek(const void** data, size_t* bytes) override {
    if (recvHead_ == cachedRecvTail_) {
      cachedRecvTail_ = recvRing_->tail.load(std::memory_order_acquire);
      if (recvHead_ == cachedRecvTail_) {
        *data = nullptr;
        return ncclSuccess;
      }
    }
    uint64_t index = recvHead_ % recvSlots_;
    *bytes = recvRing_->sizes[index];
    *data = own_->slot(peerLocal_, index);
    return ncclSuccess;
  }

  void recvRelease() override {
    recvRing_->head.store(++recvHead_, std::memory_order_release);
    ringDoorbell(peer_->header());
  }

  ncclResult_t progress() override { return ncclSuccess; }

  ncclResult_t checkPeer() override {
    ShmSegmentHeader* h = peer_->header();
    if (h->aborted.load(std::memory_order_acquire))
      return fail(ncclRemoteError, "shm: peer (pid %d) aborted its communicator", h->pid);
    if (h->pid != getpid() && kill(h->pid, 0) != 0 && errno == ESRCH)
      return fail(ncclRemoteError, "shm: peer process %d died", h->pid);
    return ncclSuccess;
  }

 private:
  ShmSegment* own_;
  std::unique_ptr<ShmSegment> peer_;
  int ownLocal_;
  int peerLocal_;
  ShmRingHeader* sendRing_;
  ShmRingHeader* recvRing_;
  uint32_t sendSlots_;
  size_t sendSlotBytes_;
  uint32_t recvSlots_;
  uint64_t sendTail_ = 0;
  uint64_t cachedSendHead_ = 0;
  uint64_t recvHead_ = 0;
  uint64_t cachedRecvTail_ = 0;
};

}  // namespace

ShmLayout ShmTransport::layoutFromEnv(int localSize) {
  ShmLayout layout;
  layout.slotBytes = settingSize(Setting::WeftShmSlotBytes);
  layout.slots = static_cast<uint32_t>(settingInt(Setting::WeftShmSlots));
  layout.localSize = localSize;
  return layout;
}

ncclResult_t ShmTransport::init(int localRank, int localSize) {
  localRank_ = localRank;
  return own_.create(layoutFromEnv(localSize));
}

ShmPeerAddress ShmTransport::address() const { return ShmPeerAddress{getpid(), own_.fd(), localRank_}; }

ncclResult_t ShmTransport::connect(const ShmPeerAddress& peer, std::unique_ptr<Connection>* out) {
  auto peerSegment = std::make_unique<ShmSegment>();
  WEFT_CHECK(peerSegment->open(peer.pid, peer.fd));
  if (peer.localRank < 0 || peer.localRank >= own_.layout().localSize || localRank_ >= peerSegment->layout().localSize)
    return fail(ncclInternalError, "shm: local ranks %d/%d out of range", localRank_, peer.localRank);
  // Fault in both rings now: the first touch of a page costs ~10 us, never inside a collective.
  own_.prefaultRing(peer.localRank);
  peerSegment->prefaultRing(localRank_);
  *out = std::make_unique<ShmConnection>(&own_, std::move(peerSegment), localRank_, peer.localRank);
  WEFT_INFO(kLogShm, "shm: connected to local rank %d (pid %d)", peer.localRank, peer.pid);
  return ncclSuccess;
}

void ShmTransport::markAborted() {
  if (!own_.header()) return;
  own_.header()->aborted.store(1, std::memory_order_release);
  own_.header()->doorbell.fetch_add(1);
  futexWake(&own_.header()->doorbell);
}

}  // namespace weft
