#include "transport/shm/shm_transport.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "common/log.h"
#include "common/settings.h"
#include "common/status.h"
#include "transport/peer_process.h"
#include "transport/send_reservation.h"

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
  ShmConnection(ShmSegment* own, std::unique_ptr<ShmSegment> peer, PeerProcess peerProcess, int ownLocal, int peerLocal)
      : own_(own),
        peer_(std::move(peer)),
        peerProcess_(std::move(peerProcess)),
        ownLocal_(ownLocal),
        peerLocal_(peerLocal) {
    sendRing_ = peer_->ring(ownLocal_);
    recvRing_ = own_->ring(peerLocal_);
    sendSlots_ = peer_->layout().slots;
    sendSlotBytes_ = peer_->layout().slotBytes;
    recvSlots_ = own_->layout().slots;
    recvSlotBytes_ = own_->layout().slotBytes;
    sendTail_ = sendRing_->tail.load(std::memory_order_relaxed);
    recvHead_ = recvRing_->head.load(std::memory_order_relaxed);
  }

  const char* transportName() const override { return "SHM"; }
  size_t maxMessageBytes() const override { return sendSlotBytes_; }

  ncclResult_t sendBuffer(size_t bytes, void** buffer) override {
    *buffer = nullptr;
    reserved_.clear();
    WEFT_CHECK(reserved_.reserve(bytes, sendSlotBytes_, "SHM"));
    if (sendTail_ - cachedSendHead_ >= sendSlots_) {
      cachedSendHead_ = sendRing_->head.load(std::memory_order_acquire);
      if (sendTail_ - cachedSendHead_ >= sendSlots_) {
        reserved_.clear();
        return ncclSuccess;
      }
    }
    *buffer = peer_->slot(ownLocal_, sendTail_ % sendSlots_);
    return ncclSuccess;
  }

  ncclResult_t sendCommit(size_t bytes) override {
    WEFT_CHECK(reserved_.commit(bytes, "SHM"));
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
    const size_t size = recvRing_->sizes[index];
    // The size is the peer's word in shared memory: never let it reach past this rank's slot.
    if (size > recvSlotBytes_)
      return fail(ncclInvalidUsage,
                  "shm: local rank %d published a message of %zu bytes into a slot of %zu bytes "
                  "(WEFT_SHM_SLOT_BYTES differs between the ranks?)",
                  peerLocal_, size, recvSlotBytes_);
    *bytes = size;
    *data = own_->slot(peerLocal_, index);
    return ncclSuccess;
  }

  void recvRelease() override {
    recvRing_->head.store(++recvHead_, std::memory_order_release);
    ringDoorbell(peer_->header());
  }

  size_t mailboxBytes() const override { return kShmMailboxBytes; }

  // Into the peer's segment, where it reads in place: the data, then the sequence.
  ncclResult_t mailboxPost(uint64_t sequence, const void* data, size_t bytes) override {
    if (bytes > kShmMailboxBytes)
      return fail(ncclInvalidUsage, "shm: a mailbox message of %zu bytes exceeds its %zu", bytes, kShmMailboxBytes);
    ShmMailbox& box = sendRing_->mailboxes[sequence & 1];
    box.bytes = bytes;
    memcpy(box.data, data, bytes);
    box.sequence.store(sequence, std::memory_order_release);
    ringDoorbell(peer_->header());
    return ncclSuccess;
  }

  ncclResult_t mailboxPeek(uint64_t sequence, const void** data, size_t* bytes) override {
    *data = nullptr;
    const ShmMailbox& box = recvRing_->mailboxes[sequence & 1];
    if (box.sequence.load(std::memory_order_acquire) != sequence) return ncclSuccess;
    const uint64_t size = box.bytes;  // the peer's word: checked before it bounds a read
    if (size > kShmMailboxBytes)
      return fail(ncclInvalidUsage, "shm: local rank %d posted a mailbox message of %llu bytes (at most %zu)",
                  peerLocal_, static_cast<unsigned long long>(size), kShmMailboxBytes);
    *bytes = size;
    *data = box.data;
    return ncclSuccess;
  }

  ncclResult_t progress() override { return ncclSuccess; }

  ncclResult_t checkPeer() override {
    ShmSegmentHeader* h = peer_->header();
    if (h->aborted.load(std::memory_order_acquire))
      return fail(ncclRemoteError, "shm: rank %d (pid %d) aborted its communicator", peerLocal_, h->pid);
    if (peerProcess_.exited() && !peerMayHaveFinished())
      return fail(ncclRemoteError, "shm: rank %d (peer process %d) died", peerLocal_, h->pid);
    return ncclSuccess;
  }

  ncclResult_t checkPeerCarriesOn() override {
    ShmSegmentHeader* h = peer_->header();
    if (!h->failed.load(std::memory_order_acquire)) return ncclSuccess;
    // The peer's words, copied once out of its segment, then bounded to the terminator.
    char failure[kPeerFailureBytes];
    std::memcpy(failure, h->failure, sizeof failure);
    const std::string text = printablePeerFailure(failure, strnlen(failure, sizeof failure));
    return fail(ncclRemoteError, "shm: rank %d (pid %d) failed a call and stopped; its error: %s", peerLocal_, h->pid,
                text.c_str());
  }

  // In this rank's own segment, where every local peer looks: the first error only (every
  // connection of the rank is told, the segment is one).
  void markFailed(const std::string& error) override {
    ShmSegmentHeader* own = own_->header();
    if (own->failed.load(std::memory_order_relaxed)) return;
    const size_t bytes = std::min(error.size(), sizeof own->failure - 1);
    std::memcpy(own->failure, error.data(), bytes);
    own->failure[bytes] = '\0';
    own->failed.store(1, std::memory_order_release);  // publishes the text
  }

 private:
  // A peer that sent its last message and exited is not an error while that message is
  // still unread here: the caller checks the peer between a recvPeek that found nothing and
  // the next one, and the message may land (and the peer exit) in between. Once the ring is
  // drained, or when this side needs room the dead peer will never free, it is an error.
  bool peerMayHaveFinished() const {
    bool unread = recvRing_->tail.load(std::memory_order_acquire) != recvHead_;
    bool sendBlocked = sendTail_ - sendRing_->head.load(std::memory_order_acquire) >= sendSlots_;
    return unread && !sendBlocked;
  }

  ShmSegment* own_;
  std::unique_ptr<ShmSegment> peer_;
  PeerProcess peerProcess_;
  int ownLocal_;
  int peerLocal_;
  ShmRingHeader* sendRing_;
  ShmRingHeader* recvRing_;
  uint32_t sendSlots_;
  size_t sendSlotBytes_;
  uint32_t recvSlots_;
  size_t recvSlotBytes_;
  uint64_t sendTail_ = 0;
  uint64_t cachedSendHead_ = 0;
  uint64_t recvHead_ = 0;
  uint64_t cachedRecvTail_ = 0;
  SendReservation reserved_;
};

}  // namespace

ShmSettings ShmTransport::settingsFromEnv() {
  return ringGeometryFromEnv(Setting::WeftShmSlotBytes, Setting::WeftShmSlots);
}

ShmTransport::~ShmTransport() { withdrawFileDescriptor(ownTicket_); }

ncclResult_t ShmTransport::listen(const TransportSetup& setup, TransportEndpoint* mine) {
  rank_ = setup.rank;
  timeoutSeconds_ = setup.timeoutSeconds;
  WEFT_CHECK(own_.create(ShmLayout{settings_.slotBytes, settings_.slots, setup.nranks}));
  WEFT_CHECK(offerFileDescriptor(own_.fd(), &ownTicket_));
  mine->pid = getpid();
  mine->shmSegment = ownTicket_;
  return ncclSuccess;
}

bool ShmTransport::canConnect(const TransportEndpoint& self, const TransportEndpoint& peer) const {
  return self.hostHash == peer.hostHash && peer.shmSegment.valid() && own_.header();
}

ncclResult_t ShmTransport::connect(const TransportEndpoint& peer, std::unique_ptr<Connection>* out) {
  int fd = -1, peerPidfd = -1;
  ncclResult_t fetched = fetchFileDescriptor(peer.shmSegment, timeoutSeconds_, &fd, &peerPidfd);
  if (fetched != ncclSuccess) {
    const std::string why = lastErrorMessage();
    return fail(fetched, "shm: cannot get rank %d's segment: %s", peer.rank, why.c_str());
  }
  PeerProcess peerProcess(peerPidfd, peer.pid);
  auto peerSegment = std::make_unique<ShmSegment>();
  WEFT_CHECK(peerSegment->open(fd, peer.rank));
  if (peer.rank < 0 || peer.rank >= own_.layout().localSize || rank_ >= peerSegment->layout().localSize)
    return fail(ncclInternalError, "shm: ranks %d/%d out of range", rank_, peer.rank);
  // Fault in both rings now: the first touch of a page costs ~10 us, never inside a collective.
  own_.prefaultRing(peer.rank);
  peerSegment->prefaultRing(rank_);
  *out = std::make_unique<ShmConnection>(&own_, std::move(peerSegment), std::move(peerProcess), rank_, peer.rank);
  WEFT_INFO(kLogShm, "shm: connected to rank %d (pid %d)", peer.rank, peer.pid);
  return ncclSuccess;
}

void ShmTransport::markAborted() {
  if (!own_.header()) return;
  own_.header()->aborted.store(1, std::memory_order_release);
  own_.header()->doorbell.fetch_add(1);
  futexWake(&own_.header()->doorbell);
}

uint32_t ShmTransport::arm() {
  ShmSegmentHeader* own = own_.header();
  uint32_t seen = own->doorbell.load(std::memory_order_acquire);
  own->sleeping.store(1, std::memory_order_relaxed);
  // Pairs with ringDoorbell(): a sender either sees `sleeping` or its message is seen by the
  // caller's last check for work after arm().
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return seen;
}

void ShmTransport::wait(uint32_t seen, long timeoutMicros) { futexWait(&own_.header()->doorbell, seen, timeoutMicros); }

void ShmTransport::disarm() { own_.header()->sleeping.store(0, std::memory_order_relaxed); }

}  // namespace weft
