#include "transport/ibverbs/rdma_connection.h"

#include "common/status.h"

namespace weft {

namespace {
constexpr uint32_t kCreditBit = 1u << 31;  // immediate of a credit update
constexpr uint32_t kCreditMask = kCreditBit - 1;
constexpr uint64_t kCreditWriteId = ~uint64_t{0};
constexpr int kPollBatch = 32;
}  // namespace

RdmaConnection::RdmaConnection(std::unique_ptr<RdmaQueue> queue, const RdmaRings& rings, int peerRank, const char* name)
    : queue_(std::move(queue)), rings_(rings), peerRank_(peerRank), name_(name), arrivedBytes_(rings.slots, 0) {}

ncclResult_t RdmaConnection::start() {
  for (uint32_t i = 0; i < receivesToPost(rings_.slots); ++i) WEFT_CHECK(queue_->postReceive(nextReceiveId_++));
  return ncclSuccess;
}

ncclResult_t RdmaConnection::failWith(const char* what, const char* error) {
  if (failed_ != ncclSuccess) return failed_;
  return failed_ = fail(ncclRemoteError, "%s: %s rank %d failed: %s (the peer died or the link is down)", name_, what,
                        peerRank_, error);
}

ncclResult_t RdmaConnection::pollCompletions() {
  WEFT_CHECK(failed_);
  RdmaCompletion completions[kPollBatch];
  for (;;) {
    int count = 0;
    WEFT_CHECK(queue_->poll(completions, kPollBatch, &count));
    for (int i = 0; i < count; ++i) {
      const RdmaCompletion& c = completions[i];
      if (!c.ok) return failWith(c.kind == RdmaCompletion::WriteDone ? "a write to" : "a receive from", c.error);
      if (c.kind == RdmaCompletion::WriteDone) {
        if (c.id == kCreditWriteId) {
          creditInFlight_ = false;
        } else {
          // RC completes signaled writes in the order they were posted.
          if (c.id != sendHead_)
            return fail(ncclInternalError, "%s: write %llu to rank %d completed, expected %llu", name_,
                        static_cast<unsigned long long>(c.id), peerRank_, static_cast<unsigned long long>(sendHead_));
          ++sendHead_;
        }
        continue;
      }
      // An arrival consumed one posted receive: post another in its place.
      WEFT_CHECK(queue_->postReceive(nextReceiveId_++));
      if (c.immediate & kCreditBit) {
        // 31 bits of a count that only grows: advance by the difference, modulo 2^31.
        peerReleased_ += (c.immediate - static_cast<uint32_t>(peerReleased_)) & kCreditMask;
        continue;
      }
      if (recvTail_ - recvHead_ >= rings_.slots)
        return fail(ncclSystemError, "%s: rank %d wrote past its credits (%llu messages unread, %u slots)", name_,
                    peerRank_, static_cast<unsigned long long>(recvTail_ - recvHead_), rings_.slots);
      if (c.immediate > rings_.slotBytes)
        return fail(ncclSystemError, "%s: rank %d sent a message of %u bytes, above the slot of %zu bytes", name_,
                    peerRank_, c.immediate, rings_.slotBytes);
      arrivedBytes_[recvTail_ % rings_.slots] = c.immediate;
      ++recvTail_;
    }
    if (count < kPollBatch) return ncclSuccess;
  }
}

ncclResult_t RdmaConnection::sendCredits() {
  // Half a ring at a time: a sender short of credits has written a whole ring, so half of it
  // gets released, and reported, before this side can be waiting on that sender.
  const uint64_t batch = rings_.slots > 1 ? rings_.slots / 2 : 1;
  if (creditInFlight_ || recvHead_ - creditsSent_ < batch || failed_ != ncclSuccess) return ncclSuccess;
  const uint32_t immediate = kCreditBit | static_cast<uint32_t>(recvHead_ & kCreditMask);
  WEFT_CHECK(queue_->postWrite(kCreditWriteId, nullptr, 0, 0, immediate));
  creditInFlight_ = true;
  creditsSent_ = recvHead_;
  return ncclSuccess;
}

ncclResult_t RdmaConnection::sendBuffer(size_t bytes, void** buffer) {
  *buffer = nullptr;
  reserved_.clear();
  WEFT_CHECK(reserved_.reserve(bytes, rings_.slotBytes, name_));
  WEFT_CHECK(pollCompletions());
  // A free local slot, and the peer's slot for this message released (credits).
  if (sendTail_ - sendHead_ >= rings_.slots || sendTail_ >= peerReleased_ + rings_.slots) {
    reserved_.clear();
    return ncclSuccess;
  }
  *buffer = rings_.send + (sendTail_ % rings_.slots) * rings_.slotBytes;
  return ncclSuccess;
}

ncclResult_t RdmaConnection::sendCommit(size_t bytes) {
  WEFT_CHECK(reserved_.commit(bytes, name_));
  WEFT_CHECK(failed_);
  const uint64_t offset = (sendTail_ % rings_.slots) * rings_.slotBytes;
  WEFT_CHECK(queue_->postWrite(sendTail_, bytes ? rings_.send + offset : nullptr, bytes, offset,
                               static_cast<uint32_t>(bytes)));
  ++sendTail_;
  return ncclSuccess;
}

ncclResult_t RdmaConnection::recvPeek(const void** data, size_t* bytes) {
  *data = nullptr;
  if (recvHead_ == recvTail_) {
    WEFT_CHECK(sendCredits());  // the peer may be waiting for credits still owed
    WEFT_CHECK(pollCompletions());
    if (recvHead_ == recvTail_) return ncclSuccess;
  }
  *data = rings_.receive + (recvHead_ % rings_.slots) * rings_.slotBytes;
  *bytes = arrivedBytes_[recvHead_ % rings_.slots];
  return ncclSuccess;
}

void RdmaConnection::recvRelease() {
  ++recvHead_;
  (void)sendCredits();  // an error stays in failed_ for the next call
}

ncclResult_t RdmaConnection::progress() {
  WEFT_CHECK(pollCompletions());
  return sendCredits();
}

}  // namespace weft
