#include "transport/tcp/tcp_transport.h"

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/log.h"
#include "common/settings.h"
#include "common/status.h"
#include "transport/send_reservation.h"

namespace weft {

namespace {

constexpr uint32_t kFrameMagic = 0x77667446;       // "wftF"
constexpr uint32_t kTcpTransportTag = 0x54435030;  // "TCP0", in the peer handshake

struct FrameHeader {
  uint32_t magic;
  uint32_t bytes;
};

// A ring of message slots in ordinary memory, allocated and faulted in once.
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
    storage.assign(bytes * count, 0);  // assign touches every page
    sizes.assign(count, 0);
  }
  char* slot(uint64_t index) { return storage.data() + (index % slots) * slotBytes; }
  bool full() const { return tail - head >= slots; }
  bool empty() const { return tail == head; }
};

class TcpConnection : public Connection {
 public:
  TcpConnection(int fd, int peerRank, size_t slotBytes, uint32_t slots) : fd_(fd), peerRank_(peerRank) {
    // No SO_SNDBUF/SO_RCVBUF: setting them turns off the kernel's buffer autotuning and is
    // clamped to net.core.[rw]mem_max (~200 KiB by default), which starves a fast link.
    setNonBlocking(fd_, true);
    send_.init(slotBytes, slots);
    recv_.init(slotBytes, slots);
  }
  ~TcpConnection() override { closeSocket(fd_); }

  const char* transportName() const override { return "TCP"; }
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
    send_.sizes[send_.tail % send_.slots] = static_cast<uint32_t>(bytes);
    ++send_.tail;
    return pumpSends();
  }

  ncclResult_t recvPeek(const void** data, size_t* bytes) override {
    if (recv_.empty()) WEFT_CHECK(pumpReceives());
    if (recv_.empty()) {
      *data = nullptr;
      // A peer that closed after its last message is fine; one we still wait on is not.
      if (peerClosed_) return failed_ = fail(ncclRemoteError, "tcp: rank %d closed the connection", peerRank_);
      return ncclSuccess;
    }
    *bytes = recv_.sizes[recv_.head % recv_.slots];
    *data = recv_.slot(recv_.head);
    return ncclSuccess;
  }

  void recvRelease() override { ++recv_.head; }

  ncclResult_t progress() override {
    WEFT_CHECK(pumpSends());
    return pumpReceives();
  }

  ncclResult_t checkPeer() override { return failed_; }
  int pollFd() const override { return peerClosed_ && send_.empty() ? -1 : fd_; }
  bool hasPendingSends() const override { return !send_.empty(); }

 private:
  // Writes queued messages (header then payload) until the socket would block.
  ncclResult_t pumpSends() {
    while (!send_.empty()) {
      uint32_t bytes = send_.sizes[send_.head % send_.slots];
      FrameHeader header{kFrameMagic, bytes};
      iovec parts[2];
      size_t headerLeft = sendOffset_ < sizeof(header) ? sizeof(header) - sendOffset_ : 0;
      int count = 0;
      if (headerLeft) parts[count++] = {reinterpret_cast<char*>(&header) + sendOffset_, headerLeft};
      size_t payloadDone = sendOffset_ > sizeof(header) ? sendOffset_ - sizeof(header) : 0;
      if (bytes > payloadDone) parts[count++] = {send_.slot(send_.head) + payloadDone, bytes - payloadDone};
      msghdr message{};
      message.msg_iov = parts;
      message.msg_iovlen = count;
      ssize_t n = count ? sendmsg(fd_, &message, MSG_NOSIGNAL | MSG_DONTWAIT) : 0;
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return ncclSuccess;
        return failed_ = fail(ncclRemoteError, "tcp: send to rank %d failed: %s", peerRank_, strerror(errno));
      }
      sendOffset_ += n;
      if (sendOffset_ == sizeof(header) + bytes) {
        sendOffset_ = 0;
        ++send_.head;
      }
    }
    return ncclSuccess;
  }

  // Reads whole frames into free receive slots until the socket has no more data.
  ncclResult_t pumpReceives() {
    WEFT_CHECK(failed_);
    while (!recv_.full() && !peerClosed_) {
      char* slot = recv_.slot(recv_.tail);
      ssize_t n;
      if (recvOffset_ < sizeof(FrameHeader)) {
        n = recv(fd_, reinterpret_cast<char*>(&recvHeader_) + recvOffset_, sizeof(FrameHeader) - recvOffset_,
                 MSG_DONTWAIT);
      } else {
        size_t done = recvOffset_ - sizeof(FrameHeader);
        n = recvHeader_.bytes > done ? recv(fd_, slot + done, recvHeader_.bytes - done, MSG_DONTWAIT) : 0;
      }
      if (n == 0 && !(recvOffset_ >= sizeof(FrameHeader) && recvHeader_.bytes == recvOffset_ - sizeof(FrameHeader))) {
        peerClosed_ = true;
        return ncclSuccess;
      }
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return ncclSuccess;
        return failed_ = fail(ncclRemoteError, "tcp: receive from rank %d failed: %s", peerRank_, strerror(errno));
      }
      recvOffset_ += n;
      if (recvOffset_ == sizeof(FrameHeader)) {
        if (recvHeader_.magic != kFrameMagic)
          return failed_ = fail(ncclSystemError, "tcp: corrupt frame from rank %d (magic %08x, %u bytes)", peerRank_,
                                recvHeader_.magic, recvHeader_.bytes);
        // Never read a frame past the slot it lands in.
        if (recvHeader_.bytes > recv_.slotBytes)
          return failed_ = fail(ncclInvalidUsage,
                                "tcp: rank %d sent a message of %u bytes, above this rank's slot of %zu bytes "
                                "(WEFT_TCP_SLOT_BYTES differs between the ranks?)",
                                peerRank_, recvHeader_.bytes, recv_.slotBytes);
      }
      if (recvOffset_ >= sizeof(FrameHeader) && recvOffset_ - sizeof(FrameHeader) == recvHeader_.bytes) {
        recv_.sizes[recv_.tail % recv_.slots] = recvHeader_.bytes;
        ++recv_.tail;
        recvOffset_ = 0;
      }
    }
    return ncclSuccess;
  }

  int fd_;
  int peerRank_;
  SlotRing send_;
  SlotRing recv_;
  size_t sendOffset_ = 0;
  size_t recvOffset_ = 0;
  FrameHeader recvHeader_{};
  ncclResult_t failed_ = ncclSuccess;
  bool peerClosed_ = false;
  SendReservation reserved_;
};

}  // namespace

TcpSettings TcpTransport::settingsFromEnv() {
  return ringGeometryFromEnv(Setting::WeftTcpSlotBytes, Setting::WeftTcpSlots);
}

ncclResult_t TcpTransport::listen(const TransportSetup& setup, TransportEndpoint* /*mine*/) {
  if (!setup.handshake) return fail(ncclInternalError, "tcp: no peer handshake to meet peers through");
  handshake_ = setup.handshake;
  return ncclSuccess;
}

// TCP reaches any peer that listens, whatever this rank's own endpoint says.
bool TcpTransport::canConnect(const TransportEndpoint& /*self*/, const TransportEndpoint& peer) const {
  return handshake_ && peer.dataAddress.length > 0;
}

ncclResult_t TcpTransport::connect(const TransportEndpoint& peer, std::unique_ptr<Connection>* out) {
  int fd = -1;
  WEFT_CHECK(handshake_->join(peer.rank, peer.dataAddress, kTcpTransportTag, 0, &fd));
  *out = std::make_unique<TcpConnection>(fd, peer.rank, settings_.slotBytes, settings_.slots);
  WEFT_INFO(kLogNet, "tcp: connected to rank %d at %s", peer.rank, peer.dataAddress.toString().c_str());
  return ncclSuccess;
}

}  // namespace weft
