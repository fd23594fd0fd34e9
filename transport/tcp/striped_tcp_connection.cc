#include "transport/tcp/striped_tcp_connection.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

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
  uint32_t pollEvents = 0;       // what the epoll set watches for on it now

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

  ncclResult_t init(const std::vector<int>& fds) {
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
    for (size_t i = 0; i < stripes_.size(); ++i) {
      setNonBlocking(stripes_[i].fd, true);
      WEFT_CHECK(watch(i, EPOLLIN, EPOLL_CTL_ADD));
    }
    return ncclSuccess;
  }

  ~StripedTcpConnection() override {
    for (Stripe& stripe : stripes_) closeSocket(stripe.fd);
    if (epollFd_ >= 0) close(epollFd_);
  }

  const char* transportName() const override { return "TCP"; }
  size_t maxMessageBytes() const override { return ring_.slotBytes; }
  bool transfersInPlace() const override { return true; }

  ncclResult_t sendBuffer(size_t bytes, void** buffer) override {
    *buffer = nullptr;
    reserved_.clear();
    WEFT_CHECK(reserved_.reserve(bytes, ring_.slotBytes, "TCP"));
    if (sendTail_ - sendHead_ >= ring_.slots) {
      reserved_.clear();
      return ncclSuccess;
    }
    *buffer = sendSlot(sendTail_);
    return ncclSuccess;
  }

  ncclResult_t sendCommit(size_t bytes) override {
    WEFT_CHECK(reserved_.commit(bytes, "TCP"));
    sendPartsLeft_[sendTail_ % ring_.slots] = queueMessage(sendSlot(sendTail_), bytes, static_cast<int64_t>(sendTail_));
    ++sendTail_;
    return pumpSends();
  }

  ncclResult_t recvPeek(const void** data, size_t* bytes) override {
    *data = nullptr;
    if (!head().complete()) WEFT_CHECK(pumpReceives());
    const IncomingMessage& m = head();
    if (!m.complete() || m.toCaller)
      return !m.complete() && headCannotComplete() ? health_.closedByPeer() : ncclSuccess;
    *bytes = m.bytes;
    *data = recvSlot(recvHead_);
    return ncclSuccess;
  }

  void recvRelease() override {
    head() = IncomingMessage{};
    ++recvHead_;
  }

  ncclResult_t sendFrom(const void* data, size_t bytes, bool* done) override {
    *done = false;
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
    WEFT_CHECK(pumpSends());
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
    if (!recvInPlace_.data) {
      if (head().started) return copyOutNextMessage(data, bytes, got, done);
      recvInPlace_ = InPlaceRecv{static_cast<char*>(data), bytes};
    } else if (recvInPlace_.data != data || recvInPlace_.bytes != bytes) {
      return fail(ncclInternalError, "tcp: a message from rank %d is still being received in place", peerRank_);
    }
    WEFT_CHECK(pumpReceives());
    IncomingMessage& m = head();
    if (m.started && m.toCaller) {
      if (!m.complete()) return headCannotComplete() ? health_.closedByPeer() : ncclSuccess;
      recvRelease();
      recvInPlace_ = InPlaceRecv{};
      *got = bytes;
      *done = true;
      return ncclSuccess;
    }
    // Its first header named another size: the message goes to its slot, for the caller to
    // report once it is whole.
    if (m.started) {
      recvInPlace_ = InPlaceRecv{};
      return copyOutNextMessage(data, bytes, got, done);
    }
    return headCannotComplete() ? health_.closedByPeer() : ncclSuccess;
  }

  void abandonInPlace() override {
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
      for (Stripe& stripe : stripes_) shutdown(stripe.fd, SHUT_RDWR);
    }
    sendInPlace_ = InPlaceSend{};
    recvInPlace_ = InPlaceRecv{};
  }

  ncclResult_t progress() override {
    WEFT_CHECK(pumpSends());
    return pumpReceives();
  }

  ncclResult_t checkPeer() override { return health_.usable(); }
  int pollFd() const override { return allClosed() && !hasPendingSends() ? -1 : epollFd_; }

  // The epoll set watches each socket for what would let this end move: input, unless the peer
  // closed it or its next part has no slot yet (either would wake the rank at once, forever),
  // and room to write while it has parts queued.
  bool armPollFd() override {
    for (size_t i = 0; i < stripes_.size(); ++i) {
      const Stripe& stripe = stripes_[i];
      const uint32_t events =
          (stripe.closed || parked(stripe) ? 0u : uint32_t{EPOLLIN}) | (stripe.hasOutgoing() ? uint32_t{EPOLLOUT} : 0u);
      if (events != stripe.pollEvents && watch(i, events, EPOLL_CTL_MOD) != ncclSuccess) return false;
    }
    return true;
  }

  bool hasPendingSends() const override {
    return std::any_of(stripes_.begin(), stripes_.end(), [](const Stripe& s) { return s.hasOutgoing(); });
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
    return parts;
  }

  // The in-place message, queued last and untouched, leaves every socket's queue.
  void retractLastMessage() {
    for (Stripe& stripe : stripes_)
      if (stripe.hasOutgoing() && stripe.outgoing[(stripe.outTail - 1) % stripe.outgoing.size()].slot == kInPlaceSlot)
        --stripe.outTail;
    --sendSequence_;
  }

  ncclResult_t streamFailed(const char* what) {
    return health_.keep(fail(ncclRemoteError, "tcp: %s rank %d failed: %s", what, peerRank_, strerror(errno)));
  }
  ncclResult_t corrupt(const Stripe& stripe, const char* why) {
    return health_.keep(fail(ncclSystemError,
                             "tcp: corrupt part from rank %d (%s: magic %08x, message %u of %u bytes, part of %u bytes "
                             "at %u)",
                             peerRank_, why, stripe.incoming.magic, stripe.incoming.sequence,
                             stripe.incoming.messageBytes, stripe.incoming.bytes, stripe.incoming.offset));
  }

  // Writes every socket's queued parts, header and body in one call each, until each would block.
  ncclResult_t pumpSends() {
    WEFT_CHECK(health_.usable());
    for (Stripe& stripe : stripes_) {
      while (stripe.hasOutgoing()) {
        OutgoingPart& part = stripe.front();
        const size_t headerSent = std::min(part.sent, sizeof(PartHeader)), bodySent = part.sent - headerSent;
        size_t moved = 0;
        const StreamIo io =
            sendSomeOfTwo(stripe.fd, reinterpret_cast<const char*>(&part.header) + headerSent,
                          sizeof(PartHeader) - headerSent, part.body + bodySent, part.header.bytes - bodySent, &moved);
        if (io == StreamIo::WouldBlock) break;
        if (io != StreamIo::Moved) return streamFailed("send to");
        if (part.slot == kInPlaceSlot && moved > 0) sendInPlace_.started = true;
        part.sent += moved;
        if (part.sent < sizeof(PartHeader) + part.header.bytes) continue;
        if (part.slot == kInPlaceSlot)
          --sendInPlace_.partsLeft;
        else
          --sendPartsLeft_[part.slot % ring_.slots];
        ++stripe.outHead;
      }
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

  // Reads every socket's parts into place until each would block, is parked or was closed.
  ncclResult_t pumpReceives() {
    WEFT_CHECK(health_.usable());
    for (Stripe& stripe : stripes_) {
      while (!stripe.closed) {
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
          continue;
        }
        size_t moved = 0;
        StreamIo io = stripe.headerComplete()
                          ? recvSome(stripe.fd, stripe.incomingInto + bodyGot, stripe.incoming.bytes - bodyGot, &moved)
                          : recvSome(stripe.fd, reinterpret_cast<char*>(&stripe.incoming) + stripe.incomingGot,
                                     sizeof(PartHeader) - stripe.incomingGot, &moved);
        if (io == StreamIo::WouldBlock) break;
        if (io == StreamIo::Failed) return streamFailed("receive from");
        if (io == StreamIo::Closed) {
          stripe.closed = true;  // an error only once a message waits for what never came
          break;
        }
        stripe.incomingGot += moved;
      }
    }
    return ncclSuccess;
  }

  int peerRank_;
  RingGeometry ring_;
  std::vector<Stripe> stripes_;
  int epollFd_ = -1;

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
                                      std::unique_ptr<Connection>* out) {
  auto connection = std::make_unique<StripedTcpConnection>(peerRank, ring);
  WEFT_CHECK(connection->init(fds));  // owns the sockets from here, also when it fails
  *out = std::move(connection);
  return ncclSuccess;
}

}  // namespace weft
