#include "transport/ucx/ucx_transport.h"

#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <vector>

#include "common/deadline.h"
#include "common/log.h"
#include "common/settings.h"
#include "common/status.h"
#include "transport/send_reservation.h"
#include "transport/ucx/ucx_library.h"
#include "transport/ucx/ucx_rail_devices.h"
#include "transport/ucx/ucx_worker.h"

namespace weft {

namespace {

constexpr size_t kMaxWorkerAddressBytes = 64 * 1024;
constexpr double kCloseSeconds = 1;          // how long closing waits for UCX to let go of our buffers
constexpr double kCloseGraceSeconds = 0.05;  // and for the peer to acknowledge the close

// A message's tag: the sender's rank in bits 32-62, the sender's release count (how many of the
// receiver's messages it has released, so re-posted: its credits) mod 2^16 in bits 16-31, and
// the message's sequence number mod 2^16 in the low bits. A posted receive matches the rank and
// the sequence number (a ring has at most 64 slots) and takes any release count, so slots fill
// in order and traffic both ways needs no separate credit updates: with 8 slots they were one
// message in four, and an 8-byte all-reduce between two namespace hosts took 13.2-14.0 us
// instead of 10.9-11.2 (docs/performance.md). Bit 63 marks the separate updates, sent when
// there is no traffic back.
constexpr ucp_tag_t kCreditTagBit = ucp_tag_t{1} << 63;
constexpr int kCountBits = 16;
constexpr uint64_t kCountMask = (uint64_t{1} << kCountBits) - 1;
constexpr ucp_tag_t kReleasedField = kCountMask << kCountBits;

ucp_tag_t messageTag(int senderRank, uint64_t sequence, uint64_t released) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(senderRank)) << 32) | ((released & kCountMask) << kCountBits) |
         (sequence & kCountMask);
}
ucp_tag_t creditTag(int senderRank) { return kCreditTagBit | messageTag(senderRank, 0, 0); }

// One message's staging slot and the UCX request moving it; UCX's callbacks fill the rest.
struct UcxSlot {
  void* request = nullptr;
  std::atomic<bool> done{false};
  ucs_status_t status = UCS_OK;
  size_t bytes = 0;         // received length
  ucp_tag_t senderTag = 0;  // received tag

  // Hands the request back to UCX (once: the slot forgets it).
  void releaseRequest() {
    if (request) ucx().ucp_request_free(request);
    request = nullptr;
  }
};

// A ring of slots in one registered region, allocated and faulted in once.
class RegisteredRing {
 public:
  ncclResult_t init(ucp_context_h context, size_t slotBytes, uint32_t slots) {
    context_ = context;
    slotBytes_ = slotBytes;
    bytes_ = slotBytes * slots;
    slots_ = std::vector<UcxSlot>(slots);
    void* memory = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (memory == MAP_FAILED)
      return fail(ncclSystemError, "ucx: cannot allocate a staging ring of %zu bytes: %s", bytes_, strerror(errno));
    memory_ = static_cast<char*>(memory);
    ucp_mem_map_params_t params{};
    params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    params.address = memory_;
    params.length = bytes_;
    ucs_status_t status = ucx().ucp_mem_map(context_, &params, &memh_);
    if (status != UCS_OK) {
      memh_ = nullptr;
      return fail(ncclSystemError, "ucx: ucp_mem_map of %zu bytes failed: %s", bytes_, ucx().ucs_status_string(status));
    }
    return ncclSuccess;
  }
  ~RegisteredRing() {
    if (memh_) ucx().ucp_mem_unmap(context_, memh_);
    if (memory_) munmap(memory_, bytes_);
  }
  char* data(uint64_t index) { return memory_ + (index % slots_.size()) * slotBytes_; }
  UcxSlot& slot(uint64_t index) { return slots_[index % slots_.size()]; }
  uint32_t size() const { return static_cast<uint32_t>(slots_.size()); }
  size_t slotBytes() const { return slotBytes_; }
  ucp_mem_h memh() const { return memh_; }

 private:
  ucp_context_h context_ = nullptr;
  char* memory_ = nullptr;
  size_t bytes_ = 0;
  size_t slotBytes_ = 0;
  std::vector<UcxSlot> slots_;
  ucp_mem_h memh_ = nullptr;
};

// What UCX's callbacks of one connection write to, and the rings it moves data in.
struct UcxConnectionIo {
  RegisteredRing send;
  RegisteredRing receive;
  UcxSlot creditIn, creditOut;
  uint64_t creditInValue = 0, creditOutValue = 0;
  std::atomic<ucs_status_t> endpointStatus{UCS_OK};
};

void sendCompleted(void* /*request*/, ucs_status_t status, void* userData) {
  auto* slot = static_cast<UcxSlot*>(userData);
  slot->status = status;
  slot->done.store(true, std::memory_order_release);
}

void receiveCompleted(void* /*request*/, ucs_status_t status, const ucp_tag_recv_info_t* info, void* userData) {
  auto* slot = static_cast<UcxSlot*>(userData);
  slot->status = status;
  slot->bytes = status == UCS_OK ? info->length : 0;
  slot->senderTag = status == UCS_OK ? info->sender_tag : 0;
  slot->done.store(true, std::memory_order_release);
}

class UcxConnection : public Connection {
 public:
  UcxConnection(std::shared_ptr<UcxWorker> worker, int rank, int peerRank)
      : worker_(std::move(worker)), rank_(rank), peerRank_(peerRank) {}

  ncclResult_t open(const std::vector<uint8_t>& peerAddress, size_t slotBytes, uint32_t slots) {
    WEFT_CHECK(io_->send.init(worker_->context(), slotBytes, slots));
    WEFT_CHECK(io_->receive.init(worker_->context(), slotBytes, slots));
    ucp_ep_params_t params{};
    params.field_mask =
        UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.address = reinterpret_cast<const ucp_address_t*>(peerAddress.data());
    params.err_mode = UCP_ERR_HANDLING_MODE_PEER;  // a dead peer fails its requests instead of hanging them
    params.err_handler.cb = endpointFailed;
    params.err_handler.arg = io_.get();
    ucs_status_t status = ucx().ucp_ep_create(worker_->worker(), &params, &endpoint_);
    if (status != UCS_OK) {
      endpoint_ = nullptr;
      return fail(ncclSystemError, "ucx: cannot open an endpoint to rank %d: %s", peerRank_,
                  ucx().ucs_status_string(status));
    }
    // The peer may send a whole ring before hearing from this side: every slot is posted now.
    for (uint64_t i = 0; i < slots; ++i) WEFT_CHECK(postReceive(i));
    return postCreditReceive();
  }

  // Completes UCX's wire-up now, while both ranks are here to progress it: each side sends a
  // credit update of zero and waits for the peer's, then flushes the endpoint, and both keep
  // progressing until the peer says over `socket` (the handshake's) that its flush is done too.
  // Otherwise the first message would wait for the peer's next progress, and a rank that sends
  // its last message and exits could leave it undelivered.
  ncclResult_t wireUp(int socket, double timeoutSeconds) {
    const Deadline deadline = Deadline::after(timeoutSeconds);
    auto waitFor = [&](auto&& done, const char* what) -> ncclResult_t {
      while (!done()) {
        WEFT_CHECK(peerError());
        if (deadline.expired())
          return fail(ncclRemoteError, "ucx: rank %d did not finish %s within %.0f s (WEFT_TIMEOUT)", peerRank_, what,
                      timeoutSeconds);
        worker_->progress();
      }
      return ncclSuccess;
    };
    io_->creditOutValue = 0;
    WEFT_CHECK(post(&io_->creditOut, &io_->creditOutValue, sizeof(io_->creditOutValue), creditTag(rank_), nullptr));
    WEFT_CHECK(waitFor([&] { return io_->creditIn.done.load(std::memory_order_acquire); }, "the wire-up"));
    WEFT_CHECK(takeCredits());
    WEFT_CHECK(waitFor([&] { return io_->creditOut.done.load(std::memory_order_acquire); }, "the wire-up"));
    WEFT_CHECK(sendCredits());
    ucp_request_param_t param{};
    void* flushing = ucx().ucp_ep_flush_nbx(endpoint_, &param);
    if (UCS_PTR_IS_ERR(flushing))
      return fail(ncclRemoteError, "ucx: flushing the endpoint to rank %d failed: %s", peerRank_,
                  ucx().ucs_status_string(UCS_PTR_STATUS(flushing)));
    ncclResult_t result = ncclSuccess;
    if (flushing) {
      result =
          waitFor([&] { return ucx().ucp_request_check_status(flushing) != UCS_INPROGRESS; }, "the endpoint flush");
      ucx().ucp_request_free(flushing);
    }
    WEFT_CHECK(result);
    const char flushed = 'F';
    WEFT_CHECK(sendAll(socket, &flushed, 1, deadline));
    char peerFlushed = 0;
    setNonBlocking(socket, true);
    WEFT_CHECK(waitFor(
        [&] {
          ssize_t n = recv(socket, &peerFlushed, 1, MSG_DONTWAIT);
          return n == 1 || (n == 0) || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
        },
        "its endpoint flush"));
    if (peerFlushed != 'F')
      return fail(ncclRemoteError, "ucx: rank %d closed the handshake during the wire-up", peerRank_);
    return ncclSuccess;
  }

  ~UcxConnection() override { close(); }

  const char* transportName() const override { return "UCX"; }
  size_t maxMessageBytes() const override { return io_->send.slotBytes(); }

  ncclResult_t sendBuffer(size_t bytes, void** buffer) override {
    *buffer = nullptr;
    reserved_.clear();
    WEFT_CHECK(reserved_.reserve(bytes, io_->send.slotBytes(), "UCX"));
    WEFT_CHECK(reapSends());
    WEFT_CHECK(takeCredits());
    if (!hasRoom()) {
      // What frees room (a send's completion, the peer's credits) arrives through the worker's
      // progress. Without it here, a sender whose sends had all left learned of its room only
      // when the executor's spin (30 us) ended in a poll, and an executor that spun longer
      // never did (ConnectionContract.OneWayStream...).
      worker_->progress();
      WEFT_CHECK(reapSends());
      WEFT_CHECK(takeCredits());
      if (!hasRoom()) {
        reserved_.clear();
        return peerError();
      }
    }
    *buffer = io_->send.data(sendTail_);
    return ncclSuccess;
  }

  ncclResult_t sendCommit(size_t bytes) override {
    WEFT_CHECK(reserved_.commit(bytes, "UCX"));
    WEFT_CHECK(peerError());
    UcxSlot& slot = io_->send.slot(sendTail_);
    WEFT_CHECK(
        post(&slot, io_->send.data(sendTail_), bytes, messageTag(rank_, sendTail_, recvHead_), io_->send.memh()));
    creditsSent_ = recvHead_;  // the peer learns our releases from this message's tag
    ++sendTail_;
    worker_->progress();  // starts the eager send or the rendezvous now
    return ncclSuccess;
  }

  ncclResult_t recvPeek(const void** data, size_t* bytes) override {
    *data = nullptr;
    UcxSlot* slot = &io_->receive.slot(recvHead_);
    if (!slot->done.load(std::memory_order_acquire)) {
      // Waiting for the peer: it may be waiting for credits that were still owed.
      WEFT_CHECK(sendCredits());
      worker_->progress();
      if (!slot->done.load(std::memory_order_acquire)) return peerError();
    }
    if (slot->status != UCS_OK)
      return failed_ = fail(ncclRemoteError, "ucx: receive from rank %d failed: %s", peerRank_,
                            ucx().ucs_status_string(slot->status));
    if (tagsRead_ <= recvHead_) takeTagCredit(recvHead_);  // takeCredits has not seen it yet
    *data = io_->receive.data(recvHead_);
    *bytes = slot->bytes;
    return ncclSuccess;
  }

  void recvRelease() override {
    UcxSlot& slot = io_->receive.slot(recvHead_);
    slot.releaseRequest();
    // The slot is free again: post it for the message one ring further on, and tell the peer.
    (void)postReceive(recvHead_ + io_->receive.size());
    ++recvHead_;
    (void)sendCredits();
  }

  ncclResult_t progress() override {
    worker_->progress();
    WEFT_CHECK(reapSends());
    WEFT_CHECK(takeCredits());
    WEFT_CHECK(sendCredits());
    return peerError();
  }

  ncclResult_t checkPeer() override { return peerError(); }
  int pollFd() const override { return worker_->eventFd(); }
  bool armPollFd() override { return worker_->arm(); }
  // Messages UCX still holds. Credits owed are not pending sends: a collective must not wait on
  // them (its peer may already have left), and they go out whenever this side next receives.
  bool hasPendingSends() const override { return sendHead_ != sendTail_; }

 private:
  static void endpointFailed(void* arg, ucp_ep_h /*endpoint*/, ucs_status_t status) {
    static_cast<UcxConnectionIo*>(arg)->endpointStatus.store(status, std::memory_order_release);
  }

  // Room for the next message: a free local slot and a receive the peer has posted for its
  // sequence number.
  bool hasRoom() const {
    return sendTail_ - sendHead_ < io_->send.size() && sendTail_ < peerReleased_ + io_->receive.size();
  }

  // The error UCX reported for the peer's endpoint, once, as ncclRemoteError naming the peer;
  // not while a message that arrived before it is still unread (a peer that exits after its
  // last message is not an error until that message has been consumed).
  ncclResult_t peerError() {
    if (failed_ != ncclSuccess) return failed_;
    const ucs_status_t status = io_->endpointStatus.load(std::memory_order_acquire);
    if (status == UCS_OK) return ncclSuccess;
    const UcxSlot& next = io_->receive.slot(recvHead_);
    if (next.done.load(std::memory_order_acquire) && next.status == UCS_OK) return ncclSuccess;
    return failed_ = fail(ncclRemoteError,
                          "ucx: the endpoint to rank %d failed: %s (the peer died or its host is unreachable)",
                          peerRank_, ucx().ucs_status_string(status));
  }

  // The parameters of a request that reports through `slot`, from a callback (never at once).
  static ucp_request_param_t requestParams(UcxSlot* slot, ucp_mem_h memh) {
    slot->done.store(false, std::memory_order_relaxed);
    slot->bytes = 0;
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    if (memh) {
      param.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
      param.memh = memh;
    }
    param.user_data = slot;
    return param;
  }

  // A tagged send whose completion UCX reports through `slot`.
  ncclResult_t post(UcxSlot* slot, const void* data, size_t bytes, ucp_tag_t tag, ucp_mem_h memh) {
    ucp_request_param_t param = requestParams(slot, memh);
    param.cb.send = sendCompleted;
    void* request = ucx().ucp_tag_send_nbx(endpoint_, data, bytes, tag, &param);
    if (UCS_PTR_IS_ERR(request)) {
      slot->request = nullptr;
      return failed_ = fail(ncclRemoteError, "ucx: send to rank %d failed: %s", peerRank_,
                            ucx().ucs_status_string(UCS_PTR_STATUS(request)));
    }
    slot->request = request;
    return ncclSuccess;
  }

  // A receive of at most `bytes` for `tag` (the bits of `mask`), reported through `slot`.
  ncclResult_t postReceiveInto(UcxSlot* slot, void* data, size_t bytes, ucp_tag_t tag, ucp_tag_t mask, ucp_mem_h memh) {
    ucp_request_param_t param = requestParams(slot, memh);
    param.cb.recv = receiveCompleted;
    void* request = ucx().ucp_tag_recv_nbx(worker_->worker(), data, bytes, tag, mask, &param);
    if (UCS_PTR_IS_ERR(request)) {
      slot->request = nullptr;
      return failed_ = fail(ncclRemoteError, "ucx: posting a receive from rank %d failed: %s", peerRank_,
                            ucx().ucs_status_string(UCS_PTR_STATUS(request)));
    }
    slot->request = request;
    return ncclSuccess;
  }

  ncclResult_t postReceive(uint64_t sequence) {
    return postReceiveInto(&io_->receive.slot(sequence), io_->receive.data(sequence), io_->receive.slotBytes(),
                           messageTag(peerRank_, sequence, 0), ~kReleasedField, io_->receive.memh());
  }
  ncclResult_t postCreditReceive() {
    return postReceiveInto(&io_->creditIn, &io_->creditInValue, sizeof(io_->creditInValue), creditTag(peerRank_),
                           ~ucp_tag_t{0}, nullptr);
  }

  // Frees the slots of sends UCX is done with, oldest first.
  ncclResult_t reapSends() {
    WEFT_CHECK(failed_);
    while (sendHead_ != sendTail_) {
      UcxSlot& slot = io_->send.slot(sendHead_);
      if (!slot.done.load(std::memory_order_acquire)) break;
      slot.releaseRequest();
      ++sendHead_;
      if (slot.status != UCS_OK)
        return failed_ = fail(ncclRemoteError, "ucx: send to rank %d failed: %s", peerRank_,
                              ucx().ucs_status_string(slot.status));
    }
    return ncclSuccess;
  }

  // Reads the peer's latest release count: from the tags of the messages that have arrived (read
  // or not: a sender waiting for credits must not depend on this side's reading order) and from
  // its separate credit updates.
  ncclResult_t takeCredits() {
    WEFT_CHECK(failed_);  // a failed update is not re-posted: nothing more to take
    tagsRead_ = std::max(tagsRead_, recvHead_);
    while (tagsRead_ < recvHead_ + io_->receive.size()) {
      const UcxSlot& slot = io_->receive.slot(tagsRead_);
      if (!slot.done.load(std::memory_order_acquire) || slot.status != UCS_OK) break;  // recvPeek reports errors
      takeTagCredit(tagsRead_);                                                        // moves tagsRead_ past it
    }
    while (io_->creditIn.done.load(std::memory_order_acquire)) {
      io_->creditIn.releaseRequest();
      if (io_->creditIn.status != UCS_OK)
        return failed_ = fail(ncclRemoteError, "ucx: credit update from rank %d failed: %s", peerRank_,
                              ucx().ucs_status_string(io_->creditIn.status));
      if (io_->creditInValue > peerReleased_) peerReleased_ = io_->creditInValue;
      WEFT_CHECK(postCreditReceive());  // an update that arrived meanwhile matches it at once
    }
    return ncclSuccess;
  }

  // The release count in the tag of message `sequence` (arrived), widened next to the latest one
  // known: they are never 2^15 apart, since each message's tag is read once, when it arrives or
  // at the latest when it is read, and the peer cannot run more than a ring ahead meanwhile.
  void takeTagCredit(uint64_t sequence) {
    const uint64_t carried = (io_->receive.slot(sequence).senderTag & kReleasedField) >> kCountBits;
    const auto ahead = static_cast<int16_t>(static_cast<uint16_t>(carried - (peerReleased_ & kCountMask)));
    if (ahead > 0) peerReleased_ += static_cast<uint64_t>(ahead);
    tagsRead_ = std::max(tagsRead_, sequence + 1);
  }

  // Tells the peer how many slots this side has released: once half a ring has been released
  // since the last update (a sender that waits for credits has sent a whole ring ahead, so
  // half of it is released before this side can wait on it), one update in flight at a time.
  ncclResult_t sendCredits() {
    if (io_->creditOut.request) {
      if (!io_->creditOut.done.load(std::memory_order_acquire)) return ncclSuccess;
      io_->creditOut.releaseRequest();
      if (io_->creditOut.status != UCS_OK)
        return failed_ = fail(ncclRemoteError, "ucx: credit update to rank %d failed: %s", peerRank_,
                              ucx().ucs_status_string(io_->creditOut.status));
    }
    if (recvHead_ - creditsSent_ < creditBatch() || failed_ != ncclSuccess) return ncclSuccess;
    io_->creditOutValue = recvHead_;
    WEFT_CHECK(post(&io_->creditOut, &io_->creditOutValue, sizeof(io_->creditOutValue), creditTag(rank_), nullptr));
    creditsSent_ = recvHead_;
    return ncclSuccess;
  }

  uint64_t creditBatch() const { return io_->receive.size() > 1 ? io_->receive.size() / 2 : 1; }

  // Every request this connection may have outstanding.
  template <class F>
  void forEachSlot(F&& visit) {
    for (RegisteredRing* ring : {&io_->send, &io_->receive})
      for (uint32_t i = 0; i < ring->size(); ++i) visit(ring->slot(i));
    visit(io_->creditIn);
    visit(io_->creditOut);
  }

  // Cancels what is posted, closes the endpoint and waits (briefly) until UCX lets go of every
  // request and slot: the rings are unmapped right after.
  void close() {
    ucp_worker_h worker = worker_->worker();
    forEachSlot([&](UcxSlot& slot) {
      if (slot.request && !slot.done.load(std::memory_order_acquire)) ucx().ucp_request_cancel(worker, slot.request);
    });
    void* closing = nullptr;
    if (endpoint_) {
      // A flushing close: what this side last sent (a rendezvous' final acknowledgement, say)
      // still reaches a peer that is finishing its collective. A failed endpoint is forced shut.
      ucp_request_param_t param{};
      param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      param.flags = io_->endpointStatus.load(std::memory_order_acquire) == UCS_OK ? 0 : UCP_EP_CLOSE_FLAG_FORCE;
      closing = ucx().ucp_ep_close_nbx(endpoint_, &param);
      if (UCS_PTR_IS_ERR(closing)) closing = nullptr;
    }
    auto slotsSettled = [&] {
      bool all = true;
      forEachSlot([&](UcxSlot& slot) { all = all && (!slot.request || slot.done.load(std::memory_order_acquire)); });
      return all;
    };
    // Cancelled receives settle locally. The close itself may need the peer's progress, which
    // a peer that is computing (or already gone) does not give: it gets a short grace, then
    // finishes in the background, and the worker's destruction ends it at the latest.
    const Deadline slotsDeadline = Deadline::after(kCloseSeconds);
    const Deadline closeDeadline = Deadline::after(kCloseGraceSeconds);
    while (!slotsDeadline.expired()) {
      const bool closed = !closing || ucx().ucp_request_check_status(closing) != UCS_INPROGRESS;
      if (slotsSettled() && (closed || closeDeadline.expired())) break;
      ucx().ucp_worker_progress(worker);
    }
    bool unfinished = closing && ucx().ucp_request_check_status(closing) == UCS_INPROGRESS;
    if (closing) ucx().ucp_request_free(closing);  // released by UCX when it completes, if it has not
    forEachSlot([&](UcxSlot& slot) {
      if (!slot.request) return;
      if (!slot.done.load(std::memory_order_acquire)) unfinished = true;
      slot.releaseRequest();
    });
    // A callback may still come (a request's, or the endpoint's error handler while it closes):
    // what it writes to, and the rings UCX may still touch, live as long as the worker.
    if (unfinished) worker_->keepUntilDestroyed(io_);
  }

  std::shared_ptr<UcxWorker> worker_;
  int rank_;
  int peerRank_;
  ucp_ep_h endpoint_ = nullptr;
  // Everything UCX's callbacks write to: it outlives this connection when a close leaves
  // requests or the endpoint's close unfinished (the worker then keeps it until it is destroyed).
  std::shared_ptr<UcxConnectionIo> io_ = std::make_shared<UcxConnectionIo>();
  uint64_t sendHead_ = 0;      // oldest send UCX still holds
  uint64_t sendTail_ = 0;      // next send
  uint64_t recvHead_ = 0;      // next message to deliver; also the slots released so far
  uint64_t peerReleased_ = 0;  // slots the peer has released: it has posted up to this + ring
  uint64_t creditsSent_ = 0;   // the release count the peer was last told
  uint64_t tagsRead_ = 0;      // messages whose tag's release count has been taken
  ncclResult_t failed_ = ncclSuccess;
  SendReservation reserved_;
};

}  // namespace

UcxSettings UcxTransport::settingsFromEnv() {
  return ringGeometryFromEnv(Setting::WeftUcxSlotBytes, Setting::WeftUcxSlots);
}

UcxTransport::UcxTransport(const UcxSettings& settings)
    : settings_(settings), disabled_(settingBool(Setting::WeftUcxDisable)) {}
UcxTransport::~UcxTransport() = default;

ncclResult_t UcxTransport::listen(const TransportSetup& setup, TransportEndpoint* /*mine*/) {
  if (!setup.handshake) return fail(ncclInternalError, "ucx: no peer handshake to meet peers through");
  handshake_ = setup.handshake;
  railInterfaces_ = setup.railInterfaces;
  return ncclSuccess;
}

bool UcxTransport::canConnect(const TransportEndpoint& /*self*/, const TransportEndpoint& peer) const {
  return handshake_ && peer.dataAddress.length > 0;
}

ncclResult_t UcxTransport::connect(const TransportEndpoint& peer, std::unique_ptr<Connection>* out) {
  // Both sides know the pair's rail (the higher rank's); each goes through its own NIC of that
  // rail, which on a rail-optimized cluster is the network the peer's NIC is on.
  const bool userDevices = getenv("UCX_NET_DEVICES") != nullptr;
  const int rail =
      !userDevices && peer.rail >= 0 && static_cast<size_t>(peer.rail) < railInterfaces_.size() ? peer.rail : -1;
  std::shared_ptr<UcxWorker>& worker = workers_[rail];
  if (!worker) WEFT_CHECK(UcxWorker::create(rail >= 0 ? ucxDevicesOfNic(railInterfaces_[rail]) : "", &worker));
  int fd = -1;
  WEFT_CHECK(handshake_->join(peer.rank, peer.dataAddress, UcxTransport::kHandshakeTag, 0, &fd));
  std::vector<uint8_t> peerAddress;
  const std::vector<uint8_t>& mine = worker->address();
  CloseSocketOnExit closer{fd};
  WEFT_CHECK(PeerHandshake::swap(fd, peer.rank, mine.data(), mine.size(), kMaxWorkerAddressBytes,
                                 handshake_->timeoutSeconds(), &peerAddress));
  auto connection = std::make_unique<UcxConnection>(worker, handshake_->rank(), peer.rank);
  connection->setDataRail(rail);
  WEFT_CHECK(connection->open(peerAddress, settings_.slotBytes, settings_.slots));
  WEFT_CHECK(connection->wireUp(fd, handshake_->timeoutSeconds()));
  const std::string devices = rail >= 0 ? "rail " + std::to_string(rail) + " (" + railInterfaces_[rail] + ")"
                                        : std::string(userDevices ? "UCX_NET_DEVICES" : "UCX's choice of devices");
  WEFT_INFO(kLogNet, "ucx: connected to rank %d through %s (worker address of %zu bytes, met via %s)", peer.rank,
            devices.c_str(), peerAddress.size(), peer.dataAddress.toString().c_str());
  *out = std::move(connection);
  return ncclSuccess;
}

}  // namespace weft
