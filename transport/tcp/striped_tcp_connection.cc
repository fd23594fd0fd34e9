#include "transport/tcp/striped_tcp_connection.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>

#include "common/socket.h"
#include "common/status.h"
#include "transport/send_reservation.h"
#include "transport/tcp/tcp_connection_health.h"

namespace weft {

namespace {

constexpr uint32_t kPartMagic = 0x77667453;  // "wftS"

// What precedes every part on its socket: enough for the receiver to place the part without
// knowing which socket carried it.
struct PartHeader {
  uint32_t magic;
  uint32_t sequence;      // the message's number in this direction, counted from 0 (wraps)
  uint32_t messageBytes;  // of the whole message
  uint32_t offset;        // of this part in the message
  uint32_t bytes;         // of this part
};

// How many parts a message of `bytes` is cut into over `sockets` sockets.
uint32_t partsOf(size_t bytes, size_t sockets) {
  return static_cast<uint32_t>(std::clamp<size_t>(bytes / kMinStripeBytes, 1, sockets));
}

constexpr int64_t kInPlaceSlot = -1;

// A helper's longest sleep: a safety net only, since everything that gives a helper work rings
// its doorbell (a missed ring shows as stalls of this length: the contract tests take seconds).
constexpr int kHelperPollMs = 1000;

// A part waiting to leave on its socket.
struct OutgoingPart {
  PartHeader header;
  const char* body;  // in a send slot, or the caller's memory
  size_t sent;       // of header and body together
  int64_t slot;      // the send slot it belongs to, or kInPlaceSlot
};

// One socket of the connection: the parts queued on it, and the part it is reading.
struct Stripe {
  int fd = -1;
  std::vector<OutgoingPart> outgoing;  // a ring; every message queues at most one part here
  uint64_t outHead = 0, outTail = 0;
  PartHeader incoming{};
  size_t incomingGot = 0;        // of header and body together
  char* incomingInto = nullptr;  // where the body lands, once the header was accepted
  bool closed = false;           // the peer closed it: nothing more comes on it
  uint32_t pollEvents = 0;       // what the epoll set watches for on it now (no helper threads)
  bool ioBusy = false;           // a system call on it is under way, without the lock

  bool hasOutgoing() const { return outHead != outTail; }
  OutgoingPart& front() { return outgoing[outHead % outgoing.size()]; }
  bool headerComplete() const { return incomingGot >= sizeof(PartHeader); }
};

// One message being put together where the receive ring holds it (or in the caller's memory).
struct IncomingMessage {
  bool started = false;   // a part's header was accepted: its size and destination are fixed
  bool toCaller = false;  // it lands in the in-place receiver's memory, not in its slot
  uint32_t bytes = 0;
  size_t got = 0;  // bytes of its parts read whole
  bool complete() const { return started && got == bytes; }
};

class StripedTcpConnection : public Connection {
 public:
  StripedTcpConnection(int peerRank, const RingGeometry& ring) : peerRank_(peerRank), ring_(ring), health_(peerRank) {}

  ncclResult_t init(const std::vector<int>& fds, int helperThreads) {
    for (int fd : fds) {
      Stripe stripe;
      stripe.fd = fd;
      stripe.outgoing.resize(ring_.slots + 1);
      stripes_.push_back(std::move(stripe));
    }
    // Allocated and faulted in once; assign() touches every page.
    sendStorage_.assign(ring_.slotBytes * ring_.slots, 0);
    sendPartsLeft_.assign(ring_.slots, 0);
    recvStorage_.assign(ring_.slotBytes * ring_.slots, 0);
    incoming_.assign(ring_.slots, IncomingMessage{});
    epollFd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epollFd_ < 0) return fail(ncclSystemError, "tcp: epoll_create1 failed: %s", strerror(errno));
    for (Stripe& stripe : stripes_) setNonBlocking(stripe.fd, true);
    if (helperThreads <= 1) {
      for (size_t i = 0; i < stripes_.size(); ++i) WEFT_CHECK(watch(i, EPOLLIN, EPOLL_CTL_ADD));
      return ncclSuccess;
    }
    // With helpers, the rank sleeps on the doorbell they ring whenever something moved.
    callerBell_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    epoll_event event{};
    event.events = EPOLLIN;
    if (callerBell_ < 0 || epoll_ctl(epollFd_, EPOLL_CTL_ADD, callerBell_, &event) != 0)
      return fail(ncclSystemError, "tcp: the doorbell of rank %d's helper threads failed: %s", peerRank_,
                  strerror(errno));
    const size_t helpers = std::min<size_t>(static_cast<size_t>(helperThreads), stripes_.size());
    for (size_t t = 0; t < helpers; ++t) {
      helperBells_.push_back(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
      if (helperBells_.back() < 0) return fail(ncclSystemError, "tcp: eventfd failed: %s", strerror(errno));
    }
    for (size_t t = 0; t < helpers; ++t) helpers_.emplace_back([this, t] { helperLoop(t); });
    return ncclSuccess;
  }

  ~StripedTcpConnection() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    for (size_t t = 0; t < helpers_.size(); ++t) ring(helperBells_[t]);
    for (std::thread& helper : helpers_) helper.join();
    for (Stripe& stripe : stripes_) closeSocket(stripe.fd);
    for (int bell : helperBells_) close(bell);
    if (callerBell_ >= 0) close(callerBell_);
    if (epollFd_ >= 0) close(epollFd_);
  }

  const char* transportName() const override { return "TCP"; }
  size_t maxMessageBytes() const override { return ring_.slotBytes; }
  bool transfersInPlace() const override { return true; }

  ncclResult_t sendBuffer(size_t bytes, void** buffer) override {
    *buffer = nullptr;
    reserved_.clear();
    WEFT_CHECK(reserved_.reserve(bytes, ring_.slotBytes, "TCP"));
    std::lock_guard<std::mutex> lock(mutex_);
    if (sendTail_ - sendHead_ >= ring_.slots) {
      reserved_.clear();
      return ncclSuccess;
    }
    *buffer = sendSlot(sendTail_);
    return ncclSuccess;
  }

  ncclResult_t sendCommit(size_t bytes) override {
    WEFT_CHECK(reserved_.commit(bytes, "TCP"));
    std::unique_lock<std::mutex> lock(mutex_);
    sendPartsLeft_[sendTail_ % ring_.slots] = queueMessage(sendSlot(sendTail_), bytes, static_cast<int64_t>(sendTail_));
    ++sendTail_;
    return moveSends(lock);
  }

  ncclResult_t recvPeek(const void** data, size_t* bytes) override {
    *data = nullptr;
    std::unique_lock<std::mutex> lock(mutex_);
    if (!head().complete()) WEFT_CHECK(moveReceives(lock));
    const IncomingMessage& m = head();
    if (!m.complete() || m.toCaller)
      return !m.complete() && headCannotComplete() ? health_.closedByPeer() : health_.usable();
    *bytes = m.bytes;
    *data = recvSlot(recvHead_);
    return ncclSuccess;
  }

  void recvRelease() override {
    std::lock_guard<std::mutex> lock(mutex_);
    releaseHead();
  }

  ncclResult_t sendFrom(const void* data, size_t bytes, bool* done) override {
    *done = false;
    std::unique_lock<std::mutex> lock(mutex_);
    if (!sendInPlace_.data) {
      WEFT_CHECK(health_.usable());
      if (bytes > UINT32_MAX) return fail(ncclInvalidUsage, "tcp: a message of %zu bytes is too large", bytes);
      sendInPlace_.data = static_cast<const char*>(data);
      sendInPlace_.bytes = bytes;
      sendInPlace_.sequence = sendSequence_;
      sendInPlace_.started = false;
      sendInPlace_.partsLeft = queueMessage(sendInPlace_.data, bytes, kInPlaceSlot);
    } else if (sendInPlace_.data != data || sendInPlace_.bytes != bytes) {
      return fail(ncclInternalError, "tcp: a message to rank %d is still being sent in place", peerRank_);
    }
    WEFT_CHECK(moveSends(lock));
    if (sendInPlace_.partsLeft == 0) {
      sendInPlace_ = InPlaceSend{};
      *done = true;
    }
    return ncclSuccess;
  }

  // The next message lands in `data` when none of it has arrived yet; otherwise it is put
  // together in its slot and copied out.
  ncclResult_t recvInto(void* data, size_t bytes, size_t* got, bool* done) override {
    *got = 0;
    *done = false;
    std::unique_lock<std::mutex> lock(mutex_);
    if (!recvInPlace_.data) {
      if (head().started) {
        lock.unlock();
        return copyOutNextMessage(data, bytes, got, done);
      }
      recvInPlace_ = InPlaceRecv{static_cast<char*>(data), bytes};
    } else if (recvInPlace_.data != data || recvInPlace_.bytes != bytes) {
      return fail(ncclInternalError, "tcp: a message from rank %d is still being received in place", peerRank_);
    }
    WEFT_CHECK(moveReceives(lock));
    IncomingMessage& m = head();
    if (m.started && m.toCaller) {
      if (!m.complete()) return headCannotComplete() ? health_.closedByPeer() : ncclSuccess;
      releaseHead();
      recvInPlace_ = InPlaceRecv{};
      *got = bytes;
      *done = true;
      return ncclSuccess;
    }
    // Its first header named another size: the message goes to its slot, for the caller to
    // report once it is whole.
    if (m.started) {
      recvInPlace_ = InPlaceRecv{};
      lock.unlock();
      return copyOutNextMessage(data, bytes, got, done);
    }
    return headCannotComplete() ? health_.closedByPeer() : ncclSuccess;
  }

  void abandonInPlace() override {
    std::unique_lock<std::mutex> lock(mutex_);
    // No system call may still be reading or writing the caller's memory: none starts from now,
    // and the ones under way finish first.
    quiescing_ = true;
    idle_.wait(
        lock, [&] { return std::none_of(stripes_.begin(), stripes_.end(), [](const Stripe& s) { return s.ioBusy; }); });
    bool broken = false;
    if (sendInPlace_.data && sendInPlace_.partsLeft > 0) {
      // Untouched and the last message queued: taken back, as if never sent. Otherwise the
      // peer would wait for its number (or for the rest of it) forever.
      if (!sendInPlace_.started && sendInPlace_.sequence == sendSequence_ - 1)
        retractLastMessage();
      else
        broken = true;
    }
    // Bytes of it may already be in the caller's memory, which is the caller's again now.
    if (recvInPlace_.data && head().started && head().toCaller) broken = true;
    if (broken) {
      health_.markOutOfStep();  // reported by the next use (the caller's error stands now)
      // Nothing queued can leave any more (and some of it pointed at the caller's memory).
      for (Stripe& stripe : stripes_) {
        shutdown(stripe.fd, SHUT_RDWR);
        stripe.outHead = stripe.outTail;
      }
    }
    sendInPlace_ = InPlaceSend{};
    recvInPlace_ = InPlaceRecv{};
    quiescing_ = false;
    lock.unlock();
    ringHelpers();
  }

  // With helpers, what they moved is already in place: only their doorbell is cleared.
  ncclResult_t progress() override {
    if (!helpers_.empty()) {
      clear(callerBell_);
      std::lock_guard<std::mutex> lock(mutex_);
      return health_.usable();
    }
    std::unique_lock<std::mutex> lock(mutex_);
    WEFT_CHECK(moveSends(lock));
    return moveReceives(lock);
  }

  ncclResult_t checkPeer() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return health_.usable();
  }
  int pollFd() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return allClosed() && !anyOutgoing() ? -1 : epollFd_;
  }

  // Without helpers, the epoll set watches each socket for what would let this end move:
  // input, unless the peer closed it or its next part has no slot yet (either would wake the
  // rank at once, forever), and room to write while it has parts queued. With helpers it
  // holds their doorbell only.
  bool armPollFd() override {
    if (!helpers_.empty()) return true;
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < stripes_.size(); ++i) {
      const Stripe& stripe = stripes_[i];
      const uint32_t events =
          (stripe.closed || parked(stripe) ? 0u : uint32_t{EPOLLIN}) | (stripe.hasOutgoing() ? uint32_t{EPOLLOUT} : 0u);
      if (events != stripe.pollEvents && watch(i, events, EPOLL_CTL_MOD) != ncclSuccess) return false;
    }
    return true;
  }

  bool hasPendingSends() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return anyOutgoing();
  }

 private:
  struct InPlaceSend {
    const char* data = nullptr;  // null when none
    size_t bytes = 0;
    uint64_t sequence = 0;
    uint32_t partsLeft = 0;
    bool started = false;  // a byte of it has left
  };
  struct InPlaceRecv {
    char* data = nullptr;  // null when none; always for the next message (recvHead_)
    size_t bytes = 0;
  };

  char* sendSlot(uint64_t index) { return sendStorage_.data() + (index % ring_.slots) * ring_.slotBytes; }
  char* recvSlot(uint64_t index) { return recvStorage_.data() + (index % ring_.slots) * ring_.slotBytes; }
  IncomingMessage& head() { return incoming_[recvHead_ % ring_.slots]; }

  ncclResult_t watch(size_t index, uint32_t events, int op) {
    epoll_event event{};
    event.events = events;
    event.data.u64 = index;
    if (epoll_ctl(epollFd_, op, stripes_[index].fd, &event) != 0)
      return health_.keep(fail(ncclSystemError, "tcp: epoll_ctl for rank %d failed: %s", peerRank_, strerror(errno)));
    stripes_[index].pollEvents = events;
    return ncclSuccess;
  }

  bool anyOutgoing() const {
    return std::any_of(stripes_.begin(), stripes_.end(), [](const Stripe& s) { return s.hasOutgoing(); });
  }

  void releaseHead() {
    head() = IncomingMessage{};
    ++recvHead_;
    // A helper whose socket waited for a slot (a header read, its message more than a ring
    // ahead until now) reads on.
    if (!helpers_.empty() && std::any_of(stripes_.begin(), stripes_.end(),
                                         [](const Stripe& s) { return s.headerComplete() && !s.incomingInto; }))
      ringHelpers();
  }

  // Doorbells are eventfds: a write that fails finds the counter full, which wakes the reader
  // all the same; a read that fails finds it already cleared.
  static void ring(int bell) {
    const uint64_t one = 1;
    (void)!write(bell, &one, sizeof(one));
  }
  static void clear(int bell) {
    uint64_t rings = 0;
    (void)!read(bell, &rings, sizeof(rings));
  }
  // Wakes the helpers: parts were queued, a slot was freed, or they are to stop.
  void ringHelpers() {
    for (int bell : helperBells_) ring(bell);
  }

  bool allClosed() const {
    return std::all_of(stripes_.begin(), stripes_.end(), [](const Stripe& s) { return s.closed; });
  }

  // The next message's missing parts can no longer come: every socket was closed, or holds a
  // later message's part next (each socket carries its parts in order).
  bool headCannotComplete() const {
    return std::all_of(stripes_.begin(), stripes_.end(), [&](const Stripe& s) { return s.closed || parked(s); });
  }

  // How far ahead of the next message to deliver a part's message is (wire numbers wrap).
  uint32_t distanceOf(const PartHeader& header) const { return header.sequence - static_cast<uint32_t>(recvHead_); }
  // A stripe whose next part belongs to a message with no slot yet: it waits, unread.
  bool parked(const Stripe& stripe) const {
    return stripe.headerComplete() && !stripe.incomingInto && distanceOf(stripe.incoming) >= ring_.slots;
  }

  // Cuts the message at `body` into parts and queues each on its socket; returns the count.
  uint32_t queueMessage(const char* body, size_t bytes, int64_t slot) {
    const uint32_t parts = partsOf(bytes, stripes_.size());
    for (uint32_t j = 0; j < parts; ++j) {
      const size_t begin = bytes * j / parts, end = bytes * (j + 1) / parts;
      Stripe& stripe = stripes_[(sendSequence_ + j) % stripes_.size()];
      PartHeader header{kPartMagic, static_cast<uint32_t>(sendSequence_), static_cast<uint32_t>(bytes),
                        static_cast<uint32_t>(begin), static_cast<uint32_t>(end - begin)};
      stripe.outgoing[stripe.outTail++ % stripe.outgoing.size()] = OutgoingPart{header, body + begin, 0, slot};
    }
    ++sendSequence_;
    queuedSinceRing_ = true;
    return parts;
  }

  // The in-place message, queued last and untouched, leaves every socket's queue.
  void retractLastMessage() {
    for (Stripe& stripe : stripes_)
      if (stripe.hasOutgoing() && stripe.outgoing[(stripe.outTail - 1) % stripe.outgoing.size()].slot == kInPlaceSlot)
        --stripe.outTail;
    --sendSequence_;
  }

  ncclResult_t streamFailed(const char* what, int error) {
    return health_.keep(fail(ncclRemoteError, "tcp: %s rank %d failed: %s", what, peerRank_, strerror(error)));
  }
  ncclResult_t corrupt(const Stripe& stripe, const char* why) {
    return health_.keep(fail(ncclSystemError,
                             "tcp: corrupt part from rank %d (%s: magic %08x, message %u of %u bytes, part of %u bytes "
                             "at %u)",
                             peerRank_, why, stripe.incoming.magic, stripe.incoming.sequence,
                             stripe.incoming.messageBytes, stripe.incoming.bytes, stripe.incoming.offset));
  }

  // One system call on `stripe` without the lock, the stripe marked busy meanwhile (only one
  // thread moves a stripe, and abandonInPlace waits for busy ones); *error is its errno.
  template <class Call>
  StreamIo unlockedIo(Stripe& stripe, std::unique_lock<std::mutex>& lock, int* error, Call&& call) {
    stripe.ioBusy = true;
    lock.unlock();
    const StreamIo io = call();
    *error = errno;
    lock.lock();
    stripe.ioBusy = false;
    idle_.notify_all();
    return io;
  }

  // Without helpers, writes every socket's queued parts until each would block; with helpers,
  // wakes them to do it.
  ncclResult_t moveSends(std::unique_lock<std::mutex>& lock) {
    WEFT_CHECK(health_.usable());
    if (!helpers_.empty()) {
      if (queuedSinceRing_) ringHelpers();
      queuedSinceRing_ = false;
      return ncclSuccess;
    }
    bool moved = false;
    for (Stripe& stripe : stripes_) WEFT_CHECK(sendOn(stripe, lock, &moved));
    return ncclSuccess;
  }

  // Writes `stripe`'s queued parts, header and body in one call each, until it would block
  // (each call through unlockedIo).
  ncclResult_t sendOn(Stripe& stripe, std::unique_lock<std::mutex>& lock, bool* moved) {
    while (stripe.hasOutgoing() && !quiescing_) {
      WEFT_CHECK(health_.usable());
      const OutgoingPart part = stripe.front();  // a copy: the queue may grow while unlocked
      const size_t headerSent = std::min(part.sent, sizeof(PartHeader)), bodySent = part.sent - headerSent;
      size_t written = 0;
      int error = 0;
      const StreamIo io = unlockedIo(stripe, lock, &error, [&] {
        return sendSomeOfTwo(stripe.fd, reinterpret_cast<const char*>(&part.header) + headerSent,
                             sizeof(PartHeader) - headerSent, part.body + bodySent, part.header.bytes - bodySent,
                             &written);
      });
      if (io == StreamIo::WouldBlock) break;
      if (io != StreamIo::Moved) return streamFailed("send to", error);
      OutgoingPart& live = stripe.front();
      if (live.slot == kInPlaceSlot && written > 0) sendInPlace_.started = true;
      live.sent += written;
      if (live.sent < sizeof(PartHeader) + live.header.bytes) continue;
      if (live.slot == kInPlaceSlot)
        --sendInPlace_.partsLeft;
      else
        --sendPartsLeft_[live.slot % ring_.slots];
      ++stripe.outHead;
      *moved = true;
    }
    while (sendHead_ != sendTail_ && sendPartsLeft_[sendHead_ % ring_.slots] == 0) ++sendHead_;
    return ncclSuccess;
  }

  // Checks a part's header and fixes where its body goes; parks it while its message has no slot.
  ncclResult_t acceptHeader(Stripe& stripe) {
    const PartHeader& header = stripe.incoming;
    if (header.magic != kPartMagic) return corrupt(stripe, "bad magic");
    const uint32_t distance = distanceOf(header);
    if (distance >= ring_.slots) {
      if (distance > UINT32_MAX / 2) return corrupt(stripe, "a message already delivered");
      return ncclSuccess;  // parked until the ring moves on
    }
    IncomingMessage& m = incoming_[(recvHead_ + distance) % ring_.slots];
    if (!m.started) {
      m.started = true;
      m.bytes = header.messageBytes;
      // The message a caller waits for in place lands in its memory; one of another size goes
      // to its slot (the caller learns its size from recvInto).
      m.toCaller = distance == 0 && recvInPlace_.data && recvInPlace_.bytes == m.bytes;
      if (!m.toCaller && m.bytes > ring_.slotBytes)
        return health_.keep(fail(ncclInvalidUsage,
                                 "tcp: rank %d sent a message of %u bytes, above this rank's slot of %zu bytes "
                                 "(WEFT_TCP_SLOT_BYTES differs between the ranks?)",
                                 peerRank_, m.bytes, ring_.slotBytes));
    } else if (m.bytes != header.messageBytes) {
      return corrupt(stripe, "another size than its other parts");
    }
    if (uint64_t{header.offset} + header.bytes > m.bytes) return corrupt(stripe, "past its message's end");
    stripe.incomingInto = (m.toCaller ? recvInPlace_.data : recvSlot(recvHead_ + distance)) + header.offset;
    return ncclSuccess;
  }

  // Without helpers, reads every socket's parts into place until each would block, is parked or
  // was closed; with helpers, they do it on their own.
  ncclResult_t moveReceives(std::unique_lock<std::mutex>& lock) {
    WEFT_CHECK(health_.usable());
    if (!helpers_.empty()) return ncclSuccess;
    bool moved = false;
    for (Stripe& stripe : stripes_) WEFT_CHECK(receiveOn(stripe, lock, &moved));
    return ncclSuccess;
  }

  // Reads `stripe`'s parts into place until it would block, is parked or was closed (each call
  // through unlockedIo).
  ncclResult_t receiveOn(Stripe& stripe, std::unique_lock<std::mutex>& lock, bool* moved) {
    while (!stripe.closed && !quiescing_) {
      WEFT_CHECK(health_.usable());
      if (stripe.headerComplete() && !stripe.incomingInto) {
        WEFT_CHECK(acceptHeader(stripe));
        if (!stripe.incomingInto) break;  // parked
      }
      const size_t bodyGot = stripe.headerComplete() ? stripe.incomingGot - sizeof(PartHeader) : 0;
      if (stripe.headerComplete() && bodyGot == stripe.incoming.bytes) {
        IncomingMessage& m = incoming_[(recvHead_ + distanceOf(stripe.incoming)) % ring_.slots];
        m.got += stripe.incoming.bytes;
        stripe.incomingGot = 0;
        stripe.incomingInto = nullptr;
        *moved = true;
        continue;
      }
      // Into the part's place, or the rest of its header (which nobody else reads until whole).
      char* into = stripe.headerComplete() ? stripe.incomingInto + bodyGot
                                           : reinterpret_cast<char*>(&stripe.incoming) + stripe.incomingGot;
      const size_t wanted =
          stripe.headerComplete() ? stripe.incoming.bytes - bodyGot : sizeof(PartHeader) - stripe.incomingGot;
      size_t got = 0;
      int error = 0;
      const StreamIo io = unlockedIo(stripe, lock, &error, [&] { return recvSome(stripe.fd, into, wanted, &got); });
      if (io == StreamIo::WouldBlock) break;
      if (io == StreamIo::Failed) return streamFailed("receive from", error);
      if (io == StreamIo::Closed) {
        stripe.closed = true;  // an error only once a message waits for what never came
        *moved = true;
        break;
      }
      stripe.incomingGot += got;
    }
    return ncclSuccess;
  }

  // Helper thread `t`: moves stripes t, t + T, ... both ways, and sleeps in poll() on them and on
  // its doorbell; rings the caller's whenever something moved or failed.
  void helperLoop(size_t t) {
    const size_t helpers = helperBells_.size();
    std::unique_lock<std::mutex> lock(mutex_);
    std::vector<pollfd> fds;
    while (!stopping_) {
      bool moved = false;
      bool failed = health_.usable() != ncclSuccess;
      for (size_t i = t; i < stripes_.size() && !failed; i += helpers)
        failed =
            sendOn(stripes_[i], lock, &moved) != ncclSuccess || receiveOn(stripes_[i], lock, &moved) != ncclSuccess;
      if (moved || failed) ring(callerBell_);
      fds.clear();
      for (size_t i = t; i < stripes_.size() && !failed && !quiescing_; i += helpers) {
        const Stripe& stripe = stripes_[i];
        const short events =
            static_cast<short>((stripe.closed || parked(stripe) ? 0 : POLLIN) | (stripe.hasOutgoing() ? POLLOUT : 0));
        if (events) fds.push_back({stripe.fd, events, 0});
      }
      fds.push_back({helperBells_[t], POLLIN, 0});
      lock.unlock();
      if (poll(fds.data(), fds.size(), kHelperPollMs) > 0 && (fds.back().revents & POLLIN)) clear(helperBells_[t]);
      lock.lock();
    }
  }

  int peerRank_;
  RingGeometry ring_;
  std::vector<Stripe> stripes_;
  int epollFd_ = -1;

  // Everything below, and the stripes' queues and states, under mutex_ (helpers and the caller
  // share them); system calls run without it, their stripe marked busy.
  mutable std::mutex mutex_;
  std::condition_variable idle_;  // a stripe stopped being busy
  bool quiescing_ = false;        // abandonInPlace waits for the busy stripes: none starts
  bool stopping_ = false;
  std::vector<std::thread> helpers_;  // NCCL_SOCKET_NTHREADS above 1
  std::vector<int> helperBells_;      // eventfds: one per helper
  int callerBell_ = -1;               // eventfd the helpers ring; in the epoll set
  bool queuedSinceRing_ = false;      // parts queued that the helpers were not yet woken for

  std::vector<char> sendStorage_;
  std::vector<uint32_t> sendPartsLeft_;   // per send slot: its parts not yet written whole
  uint64_t sendHead_ = 0, sendTail_ = 0;  // slots
  uint64_t sendSequence_ = 0;             // the next message's number
  SendReservation reserved_;
  InPlaceSend sendInPlace_;

  std::vector<char> recvStorage_;
  std::vector<IncomingMessage> incoming_;  // per receive slot
  uint64_t recvHead_ = 0;                  // the next message to deliver
  InPlaceRecv recvInPlace_;

  TcpConnectionHealth health_;
};

}  // namespace

ncclResult_t makeStripedTcpConnection(const std::vector<int>& fds, int peerRank, const RingGeometry& ring,
                                      int helperThreads, std::unique_ptr<Connection>* out) {
  auto connection = std::make_unique<StripedTcpConnection>(peerRank, ring);
  WEFT_CHECK(connection->init(fds, helperThreads));  // owns the sockets from here, also when it fails
  *out = std::move(connection);
  return ncclSuccess;
}

}  // namespace weft
