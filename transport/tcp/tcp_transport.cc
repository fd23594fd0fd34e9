#include "transport/tcp/tcp_transport.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/log.h"
#include "common/settings.h"
#include "common/status.h"
#include "common/tls_session.h"
#include "transport/send_reservation.h"
#include "transport/tcp/striped_tcp_connection.h"
#include "transport/tcp/tcp_congestion.h"
#include "transport/tcp/tcp_connection_health.h"

namespace weft {

namespace {

constexpr uint32_t kFrameMagic = 0x77667446;  // "wftF"
// A frame that carries no message: the sender's communicator failed a call, and this is its
// error (Connection::markFailed). Read and kept aside, never delivered.
constexpr uint32_t kFailureFrameMagic = 0x77667458;  // "wftX", at most kPeerFailureBytes
constexpr uint32_t kTcpTransportTag = 0x54435030;    // "TCP0", in the peer handshake

struct FrameHeader {
  uint32_t magic;
  uint32_t bytes;
};

// A ring of message slots in ordinary memory, allocated and faulted in once. Each slot is
// preceded by room for its frame header, so that a frame leaves in one write (one TLS record
// rather than a record for the header and another for the payload).
struct SlotRing {
  std::vector<char> storage;
  std::vector<uint32_t> sizes;
  size_t slotBytes = 0;
  uint32_t slots = 0;
  uint64_t head = 0;  // first slot not yet released
  uint64_t tail = 0;  // first slot not yet filled

  void init(size_t bytes, uint32_t count) {
    slotBytes = bytes;
    slots = count;
    storage.assign((sizeof(FrameHeader) + bytes) * count, 0);  // assign touches every page
    sizes.assign(count, 0);
  }
  char* frame(uint64_t index) { return storage.data() + (index % slots) * (sizeof(FrameHeader) + slotBytes); }
  char* slot(uint64_t index) { return frame(index) + sizeof(FrameHeader); }
  bool full() const { return tail - head >= slots; }
  bool empty() const { return tail == head; }
};

class TcpConnection : public Connection {
 public:
  // `tls`, when set, carries every byte (WEFT_ENCRYPTION=tls).
  TcpConnection(int fd, int peerRank, size_t slotBytes, uint32_t slots, std::unique_ptr<TlsSession> tls)
      : fd_(fd), peerRank_(peerRank), tls_(std::move(tls)), health_(peerRank) {
    // No SO_SNDBUF/SO_RCVBUF: setting them turns off the kernel's buffer autotuning and is
    // clamped to net.core.[rw]mem_max (~200 KiB by default), which starves a fast link.
    setNonBlocking(fd_, true);
    send_.init(slotBytes, slots);
    recv_.init(slotBytes, slots);
  }
  ~TcpConnection() override {
    tls_.reset();  // its close_notify goes out before the socket closes
    closeSocket(fd_);
  }

  const char* transportName() const override { return "TCP"; }
  // Plain sockets only: TLS copies every byte into its records anyway.
  bool transfersInPlace() const override { return !tls_; }
  size_t maxMessageBytes() const override { return send_.slotBytes; }

  ncclResult_t sendBuffer(size_t bytes, void** buffer) override {
    *buffer = nullptr;
    reserved_.clear();
    WEFT_CHECK(reserved_.reserve(bytes, send_.slotBytes, "TCP"));
    if (send_.full()) {
      reserved_.clear();
      return ncclSuccess;
    }
    *buffer = send_.slot(send_.tail);
    return ncclSuccess;
  }

  ncclResult_t sendCommit(size_t bytes) override {
    WEFT_CHECK(reserved_.commit(bytes, "TCP"));
    const FrameHeader header{kFrameMagic, static_cast<uint32_t>(bytes)};
    memcpy(send_.frame(send_.tail), &header, sizeof(header));
    send_.sizes[send_.tail % send_.slots] = static_cast<uint32_t>(bytes);
    ++send_.tail;
    return pumpSends();
  }

  ncclResult_t recvPeek(const void** data, size_t* bytes) override {
    if (recv_.empty()) WEFT_CHECK(pumpReceives());
    if (recv_.empty()) {
      *data = nullptr;
      // A peer that closed after its last message is fine; one we still wait on is not.
      if (peerClosed_) return health_.closedByPeer();
      return ncclSuccess;
    }
    *bytes = recv_.sizes[recv_.head % recv_.slots];
    *data = recv_.slot(recv_.head);
    return ncclSuccess;
  }

  void recvRelease() override { ++recv_.head; }

  // The message leaves from `data` after every frame queued before it, header and bytes in one
  // write where the socket takes them.
  ncclResult_t sendFrom(const void* data, size_t bytes, bool* done) override {
    *done = false;
    if (tls_) return Connection::sendFrom(data, bytes, done);
    if (!sendInPlace_.data) {
      WEFT_CHECK(pumpSends());
      if (!send_.empty()) return ncclSuccess;  // frames queued before it go first
      if (bytes > UINT32_MAX) return fail(ncclInvalidUsage, "tcp: a message of %zu bytes is too large", bytes);
      sendInPlace_ = InPlaceSend{static_cast<const char*>(data), bytes, 0, false};
    } else if (sendInPlace_.data != data || sendInPlace_.bytes != bytes) {
      return fail(ncclInternalError, "tcp: a message to rank %d is still being sent in place", peerRank_);
    }
    WEFT_CHECK(pumpSends());
    // Finished here or by an earlier progress(): said once, to this caller.
    if (sendInPlace_.complete) {
      sendInPlace_ = InPlaceSend{};
      *done = true;
    }
    return ncclSuccess;
  }

  // The next message lands in `data` when nothing before it is still in the receive ring; what
  // the ring already holds is copied out of it.
  ncclResult_t recvInto(void* data, size_t bytes, size_t* got, bool* done) override {
    *got = 0;
    *done = false;
    if (tls_) return Connection::recvInto(data, bytes, got, done);
    if (!recvInPlace_.data) {
      if (!recv_.empty() || recvOffset_ != 0) return copyOutNextMessage(data, bytes, got, done);
      recvInPlace_ = InPlaceRecv{static_cast<char*>(data), bytes, false};
    } else if (recvInPlace_.data != data || recvInPlace_.bytes != bytes) {
      return fail(ncclInternalError, "tcp: a message from rank %d is still being received in place", peerRank_);
    }
    WEFT_CHECK(pumpReceives());
    if (recvInPlace_.complete) {
      recvInPlace_ = InPlaceRecv{};
      *got = bytes;
      *done = true;
      return ncclSuccess;
    }
    // Its header named another size: the message went to the ring, for the caller to report.
    if (!recvInPlace_.data) return copyOutNextMessage(data, bytes, got, done);
    if (peerClosed_) return health_.closedByPeer();
    return ncclSuccess;
  }

  void abandonInPlace() override {
    // A frame half written or half read cannot be finished without the caller's memory: the
    // stream is out of step from here on.
    const bool sendStarted = sendInPlace_.data && !sendInPlace_.complete && sendInPlace_.sent > 0;
    const bool recvStarted = recvInPlace_.data && recvToCaller_;
    if (sendStarted || recvStarted) {
      health_.markOutOfStep();  // reported by the next use (the caller's error stands now)
      shutdown(fd_, SHUT_RDWR);
    }
    sendInPlace_ = InPlaceSend{};
    recvInPlace_ = InPlaceRecv{};
    recvToCaller_ = false;
  }

  ncclResult_t progress() override {
    WEFT_CHECK(pumpSends());
    return pumpReceives();
  }

  ncclResult_t checkPeer() override { return health_.usable(); }

  ncclResult_t checkPeerCarriesOn() override {
    if (!peerFailed_) return ncclSuccess;
    return fail(ncclRemoteError, "tcp: rank %d failed a call and stopped; its error: %s", peerRank_,
                peerFailure_.c_str());
  }

  // A failure frame behind what is already queued, pushed as far as the socket takes it now (the
  // rest leaves with the next progress, ncclCommShrink's messages say). Not while a message sent
  // in place is unfinished: the frame would cut into it.
  void markFailed(const std::string& error) override {
    if (failureSent_ || !health_.inStep() || send_.full() || (sendInPlace_.data && !sendInPlace_.complete)) return;
    failureSent_ = true;
    const size_t bytes = std::min({error.size(), kPeerFailureBytes, send_.slotBytes});
    const FrameHeader header{kFailureFrameMagic, static_cast<uint32_t>(bytes)};
    memcpy(send_.frame(send_.tail), &header, sizeof(header));
    memcpy(send_.slot(send_.tail), error.data(), bytes);
    send_.sizes[send_.tail % send_.slots] = static_cast<uint32_t>(bytes);
    ++send_.tail;
    (void)pumpSends();  // a failure here is the connection's, reported at its next use
  }
  int pollFd() const override { return peerClosed_ && send_.empty() ? -1 : fd_; }
  // Records TLS has already read from the socket wake no poll(2): progress instead of sleeping.
  bool armPollFd() override { return !tls_ || !tls_->hasBufferedInput(); }
  bool hasPendingSends() const override {
    return !send_.empty() || (sendInPlace_.data && !sendInPlace_.complete) || (tls_ && tls_->hasUnsentOutput());
  }

 private:
  // One non-blocking write or read on the socket, through TLS when it is on.
  StreamIo writeSome(const char* data, size_t bytes, size_t* moved) {
    return tls_ ? tls_->write(data, bytes, moved) : sendSome(fd_, data, bytes, moved);
  }
  StreamIo readSome(char* data, size_t bytes, size_t* moved) {
    return tls_ ? tls_->read(data, bytes, moved) : recvSome(fd_, data, bytes, moved);
  }
  ncclResult_t streamFailed(const char* what) {
    if (tls_)
      return health_.keep(fail(ncclRemoteError,
                               "tcp: TLS %s rank %d failed: %s (WEFT_ENCRYPTION=tls: do both ranks hold the same job "
                               "secret, or certificates from the same WEFT_TLS_CA?)",
                               what, peerRank_, tls_->lastError().c_str()));
    return health_.keep(fail(ncclRemoteError, "tcp: %s rank %d failed: %s", what, peerRank_, strerror(errno)));
  }

  // Writes the message sent in place (started only when the ring was empty, so it goes first),
  // then queued frames (header and payload, one after the other in the ring), until the socket
  // would block.
  ncclResult_t pumpSends() {
    WEFT_CHECK(health_.usable());
    while (sendInPlace_.data && !sendInPlace_.complete) {
      InPlaceSend& m = sendInPlace_;
      const FrameHeader header{kFrameMagic, static_cast<uint32_t>(m.bytes)};
      const size_t headerSent = std::min(m.sent, sizeof(FrameHeader)), bodySent = m.sent - headerSent;
      size_t moved = 0;
      switch (sendSomeOfTwo(fd_, reinterpret_cast<const char*>(&header) + headerSent, sizeof(FrameHeader) - headerSent,
                            m.data + bodySent, m.bytes - bodySent, &moved)) {
        case StreamIo::Moved: break;
        case StreamIo::WouldBlock: return ncclSuccess;
        case StreamIo::Closed:
        case StreamIo::Failed: return streamFailed("send to");
      }
      m.sent += moved;
      m.complete = m.sent == sizeof(FrameHeader) + m.bytes;
    }
    while (!send_.empty()) {
      const size_t frameBytes = sizeof(FrameHeader) + send_.sizes[send_.head % send_.slots];
      size_t moved = 0;
      switch (writeSome(send_.frame(send_.head) + sendOffset_, frameBytes - sendOffset_, &moved)) {
        case StreamIo::Moved: break;
        case StreamIo::WouldBlock: return ncclSuccess;
        case StreamIo::Closed:
        case StreamIo::Failed: return streamFailed("send to");
      }
      sendOffset_ += moved;
      if (sendOffset_ == frameBytes) {
        sendOffset_ = 0;
        ++send_.head;
      }
    }
    // TLS collects records to send them together: what it holds leaves now.
    if (tls_ && tls_->flush() == StreamIo::Failed) return streamFailed("send to");
    return ncclSuccess;
  }

  // Reads whole frames into free receive slots until the socket has no more data.
  ncclResult_t pumpReceives() {
    WEFT_CHECK(health_.usable());
    while (!recv_.full() && !peerClosed_) {
      char* slot = recv_.slot(recv_.tail);
      size_t moved = 0;
      StreamIo io = StreamIo::Moved;
      if (recvOffset_ < sizeof(FrameHeader)) {
        io = readSome(reinterpret_cast<char*>(&recvHeader_) + recvOffset_, sizeof(FrameHeader) - recvOffset_, &moved);
      } else {
        size_t done = recvOffset_ - sizeof(FrameHeader);
        char* into = recvToCaller_ ? recvInPlace_.data : slot;
        if (recvHeader_.bytes > done) io = readSome(into + done, recvHeader_.bytes - done, &moved);
      }
      if (io == StreamIo::WouldBlock) return ncclSuccess;
      if (io == StreamIo::Failed) return streamFailed("receive from");
      if (io == StreamIo::Closed) {
        peerClosed_ = true;
        return ncclSuccess;
      }
      recvOffset_ += moved;
      const bool failureFrame = recvHeader_.magic == kFailureFrameMagic;
      if (recvOffset_ == sizeof(FrameHeader)) {
        if ((recvHeader_.magic != kFrameMagic && !failureFrame) ||
            (failureFrame && recvHeader_.bytes > kPeerFailureBytes))
          return health_.keep(fail(ncclSystemError, "tcp: corrupt frame from rank %d (magic %08x, %u bytes)", peerRank_,
                                   recvHeader_.magic, recvHeader_.bytes));
        // The message a caller waits for in place (recvInto registers it only while the ring is
        // empty, so this is it) lands in its memory; one of another size goes to the ring.
        if (!failureFrame && recvInPlace_.data && !recvInPlace_.complete) {
          recvToCaller_ = recvHeader_.bytes == recvInPlace_.bytes;
          if (!recvToCaller_) recvInPlace_ = InPlaceRecv{};
        }
        // Never read a frame past the slot it lands in.
        if (!recvToCaller_ && recvHeader_.bytes > recv_.slotBytes)
          return health_.keep(fail(ncclInvalidUsage,
                                   "tcp: rank %d sent a message of %u bytes, above this rank's slot of %zu bytes "
                                   "(WEFT_TCP_SLOT_BYTES differs between the ranks?)",
                                   peerRank_, recvHeader_.bytes, recv_.slotBytes));
      }
      if (recvOffset_ >= sizeof(FrameHeader) && recvOffset_ - sizeof(FrameHeader) == recvHeader_.bytes) {
        if (failureFrame) {  // read into the free slot, kept aside, the slot left free
          peerFailed_ = true;
          peerFailure_ = printablePeerFailure(slot, recvHeader_.bytes);
        } else if (recvToCaller_) {
          recvInPlace_.complete = true;
          recvToCaller_ = false;
        } else {
          recv_.sizes[recv_.tail % recv_.slots] = recvHeader_.bytes;
          ++recv_.tail;
        }
        recvOffset_ = 0;
      }
    }
    return ncclSuccess;
  }

  int fd_;
  int peerRank_;
  std::unique_ptr<TlsSession> tls_;
  SlotRing send_;
  SlotRing recv_;
  size_t sendOffset_ = 0;
  size_t recvOffset_ = 0;
  FrameHeader recvHeader_{};
  // The message being sent from the caller's memory (sendFrom): data null when none.
  struct InPlaceSend {
    const char* data = nullptr;
    size_t bytes = 0;
    size_t sent = 0;        // of header and bytes together
    bool complete = false;  // until sendFrom has said so
  } sendInPlace_;
  // The message the caller waits for in its memory (recvInto): data null when none.
  struct InPlaceRecv {
    char* data = nullptr;
    size_t bytes = 0;
    bool complete = false;
  } recvInPlace_;
  bool recvToCaller_ = false;  // the frame being read goes to recvInPlace_.data
  TcpConnectionHealth health_;
  bool peerClosed_ = false;
  bool failureSent_ = false;  // markFailed's frame is queued (once)
  bool peerFailed_ = false;   // the peer's failure frame arrived: its text
  std::string peerFailure_;
  SendReservation reserved_;
};

}  // namespace

std::unique_ptr<Connection> makeTcpConnection(int fd, int peerRank, const TcpSettings& settings) {
  return std::make_unique<TcpConnection>(fd, peerRank, settings.slotBytes, settings.slots, nullptr);
}

TcpSettings TcpTransport::settingsFromEnv() {
  const RingGeometry ring = ringGeometryFromEnv(Setting::WeftTcpSlotBytes, Setting::WeftTcpSlots);
  const int64_t threads = settingInt(Setting::NcclSocketNthreads);
  const int64_t sockets = settingInt(Setting::NcclNsocksPerthread) * threads;
  if (sockets > kMaxSocketsPerPeer)
    WEFT_WARN("NCCL_NSOCKS_PERTHREAD x NCCL_SOCKET_NTHREADS = %lld: capped at %d sockets per peer",
              static_cast<long long>(sockets), kMaxSocketsPerPeer);
  return TcpSettings{ring.slotBytes, ring.slots, static_cast<uint32_t>(std::min<int64_t>(sockets, kMaxSocketsPerPeer)),
                     static_cast<uint32_t>(threads)};
}

ncclResult_t TcpTransport::listen(const TransportSetup& setup, TransportEndpoint* /*mine*/) {
  if (!setup.handshake) return fail(ncclInternalError, "tcp: no peer handshake to meet peers through");
  handshake_ = setup.handshake;
  TlsSettings tls;
  WEFT_CHECK(tlsSettingsFromEnv(&tls));
  if (tls.enabled) WEFT_CHECK(TlsContext::create(tls, &tls_));
  if (tls_ && settings_.socketsPerPeer > 1) {
    WEFT_WARN(
        "tcp: WEFT_ENCRYPTION=tls runs one socket per peer; NCCL_NSOCKS_PERTHREAD x NCCL_SOCKET_NTHREADS = %u is "
        "not used",
        settings_.socketsPerPeer);
    settings_.socketsPerPeer = 1;
  }
  return ncclSuccess;
}

// TCP reaches any peer that listens, whatever this rank's own endpoint says.
bool TcpTransport::canConnect(const TransportEndpoint& /*self*/, const TransportEndpoint& peer) const {
  return handshake_ && peer.dataAddress.length > 0;
}

ncclResult_t TcpTransport::connect(const TransportEndpoint& peer, std::unique_ptr<Connection>* out) {
  WEFT_CHECK(settings_.socketsPerPeer > 1 ? connectStriped(peer, out) : connectOne(peer, out));
  (*out)->setDataRail(peer.rail);  // peer.dataAddress is the rail's listener, or the rail's NIC is ours
  return ncclSuccess;
}

ncclResult_t TcpTransport::joinDataSocket(const TransportEndpoint& peer, uint32_t stream, int* fd) {
  WEFT_CHECK(handshake_->join(peer.rank, peer.dataAddress, kTcpTransportTag, stream, fd));
  ncclResult_t tuned = applyCongestionControl(*fd, peer.rank);
  if (tuned != ncclSuccess) closeSocket(*fd);
  return tuned;
}

ncclResult_t TcpTransport::connectOne(const TransportEndpoint& peer, std::unique_ptr<Connection>* out) {
  int fd = -1;
  WEFT_CHECK(joinDataSocket(peer, 0, &fd));
  std::unique_ptr<TlsSession> tls;
  if (tls_) {
    // The rank that joined is TLS's client; the handshake runs with the first traffic.
    setNonBlocking(fd, true);
    ncclResult_t started = TlsSession::start(fd, handshake_->rank() < peer.rank, *tls_,
                                             TlsPsk::shared(handshake_->derivedKey("weft tls pre-shared key")), &tls);
    if (started != ncclSuccess) {
      closeSocket(fd);
      return started;
    }
  }
  *out = std::make_unique<TcpConnection>(fd, peer.rank, settings_.slotBytes, settings_.slots, std::move(tls));
  WEFT_INFO(kLogNet, "tcp: connected to rank %d at %s%s", peer.rank, peer.dataAddress.toString().c_str(),
            tls_ ? " (TLS 1.3)" : "");
  return ncclSuccess;
}

// Stream i of the pair is the i-th socket at both ends; both ranks join them in the same order.
ncclResult_t TcpTransport::connectStriped(const TransportEndpoint& peer, std::unique_ptr<Connection>* out) {
  std::vector<int> fds;
  for (uint32_t stream = 0; stream < settings_.socketsPerPeer; ++stream) {
    int fd = -1;
    ncclResult_t joined = joinDataSocket(peer, stream, &fd);
    if (joined != ncclSuccess) {
      for (int& open : fds) closeSocket(open);
      return joined;
    }
    fds.push_back(fd);
  }
  WEFT_CHECK(makeStripedTcpConnection(fds, peer.rank, RingGeometry{settings_.slotBytes, settings_.slots},
                                      static_cast<int>(settings_.helperThreads), out));
  WEFT_INFO(kLogNet, "tcp: connected to rank %d at %s over %u sockets, moved by %s", peer.rank,
            peer.dataAddress.toString().c_str(), settings_.socketsPerPeer,
            settings_.helperThreads > 1 ? (std::to_string(settings_.helperThreads) + " helper threads").c_str()
                                        : "the collective's thread");
  return ncclSuccess;
}

}  // namespace weft
