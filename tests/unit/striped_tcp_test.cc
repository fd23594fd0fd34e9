// The striped TCP connection's wire format (transport/tcp/striped_tcp_connection.h), read and
// written raw at the other ends of socketpairs: which socket carries which part of a message,
// that the receiver puts parts back together in message order whatever order the sockets
// deliver them in, and that a malformed part is an error naming the peer.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "common/status.h"
#include "transport/tcp/striped_tcp_connection.h"

using namespace weft;

namespace {

// The part header as the format defines it: five 32-bit words in host order.
struct Part {
  uint32_t magic = 0x77667453;  // "wftS"
  uint32_t sequence = 0;
  uint32_t messageBytes = 0;
  uint32_t offset = 0;
  uint32_t bytes = 0;
};
static_assert(sizeof(Part) == 20);

constexpr size_t kSockets = 4;
constexpr RingGeometry kRing{512 << 10, 4};
constexpr int kPeer = 3;

uint8_t byteOf(uint64_t message, size_t position) { return static_cast<uint8_t>(message * 29 + position * 13); }

// A connection over the near ends of kSockets socketpairs; the test holds the far ends. Each
// test runs with the caller's thread moving the sockets (1) and with two helper threads (2).
class StripedTcp : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    std::vector<int> near;
    for (size_t i = 0; i < kSockets; ++i) {
      int pair[2];
      ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
      near.push_back(pair[0]);
      far_.push_back(pair[1]);
    }
    ASSERT_EQ(makeStripedTcpConnection(near, kPeer, kRing, GetParam(), &connection_), ncclSuccess)
        << lastErrorMessage();
  }
  void TearDown() override {
    connection_.reset();
    for (int fd : far_) close(fd);
  }

  void send(uint64_t message, size_t bytes) {
    void* buffer = nullptr;
    ASSERT_EQ(connection_->sendBuffer(bytes, &buffer), ncclSuccess) << lastErrorMessage();
    ASSERT_NE(buffer, nullptr);
    auto* out = static_cast<uint8_t*>(buffer);
    for (size_t i = 0; i < bytes; ++i) out[i] = byteOf(message, i);
    ASSERT_EQ(connection_->sendCommit(bytes), ncclSuccess) << lastErrorMessage();
  }

  // The next part on far socket `socket`, read whole while the connection keeps sending.
  Part readPart(size_t socket, std::vector<uint8_t>* body) {
    Part part;
    readAll(socket, &part, sizeof part);
    body->resize(part.bytes);
    readAll(socket, body->data(), part.bytes);
    return part;
  }
  void readAll(size_t socket, void* into, size_t bytes) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (size_t got = 0; got < bytes;) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "socket " << socket << " got " << got << " of " << bytes;
      ASSERT_EQ(connection_->progress(), ncclSuccess) << lastErrorMessage();
      ssize_t n = recv(far_[socket], static_cast<char*>(into) + got, bytes - got, MSG_DONTWAIT);
      if (n > 0) got += static_cast<size_t>(n);
    }
  }

  void writePart(size_t socket, const Part& part, uint64_t message) {
    std::vector<uint8_t> frame(sizeof part + part.bytes);
    memcpy(frame.data(), &part, sizeof part);
    for (size_t i = 0; i < part.bytes; ++i) frame[sizeof part + i] = byteOf(message, part.offset + i);
    ASSERT_EQ(write(far_[socket], frame.data(), frame.size()), static_cast<ssize_t>(frame.size()));
  }

  // The next whole message, or nullptr with the connection's error in *result (or after 2 s).
  const uint8_t* receive(size_t* bytes, ncclResult_t* result) {
    const void* data = nullptr;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!data && std::chrono::steady_clock::now() < deadline) {
      if ((*result = connection_->progress()) != ncclSuccess) return nullptr;
      if ((*result = connection_->recvPeek(&data, bytes)) != ncclSuccess) return nullptr;
      if (!data) std::this_thread::yield();
    }
    return static_cast<const uint8_t*>(data);
  }

  std::vector<int> far_;
  std::unique_ptr<Connection> connection_;
};

TEST_P(StripedTcp, PartsOfAtLeast64KiBGoOnConsecutiveSocketsStartingWhereTheMessageNumberPoints) {
  // 512 KiB: four parts of 128 KiB on sockets 0-3. 100 B: one part, on socket 1 (message 1).
  // 200 KiB: three parts (no part below 64 KiB), on sockets 2, 3, 0.
  send(0, 512 << 10);
  send(1, 100);
  send(2, 200 << 10);
  struct Expected {
    size_t socket;
    uint32_t sequence, messageBytes, offset, bytes;
  };
  const std::vector<Expected> expected = {{0, 0, 512 << 10, 0, 128 << 10},
                                          {1, 0, 512 << 10, 128 << 10, 128 << 10},
                                          {2, 0, 512 << 10, 256 << 10, 128 << 10},
                                          {3, 0, 512 << 10, 384 << 10, 128 << 10},
                                          {1, 1, 100, 0, 100},
                                          {2, 2, 200 << 10, 0, 68266},
                                          {3, 2, 200 << 10, 68266, 68267},
                                          {0, 2, 200 << 10, 136533, 68267}};
  for (const Expected& e : expected) {
    std::vector<uint8_t> body;
    Part part = readPart(e.socket, &body);
    SCOPED_TRACE("message " + std::to_string(e.sequence) + " on socket " + std::to_string(e.socket));
    EXPECT_EQ(part.magic, 0x77667453u);
    EXPECT_EQ(part.sequence, e.sequence);
    EXPECT_EQ(part.messageBytes, e.messageBytes);
    EXPECT_EQ(part.offset, e.offset);
    ASSERT_EQ(part.bytes, e.bytes);
    for (size_t i = 0; i < body.size(); ++i) ASSERT_EQ(body[i], byteOf(e.sequence, e.offset + i)) << "byte " << i;
  }
  EXPECT_FALSE(connection_->hasPendingSends());
}

TEST_P(StripedTcp, ReceiverDeliversWholeMessagesInOrderWhateverOrderThePartsArriveIn) {
  // Message 1 (one part) arrives first, then message 0's parts last to first, then message 2's
  // second part before its first: each socket still carries its own parts in order.
  writePart(1, Part{0x77667453, 1, 10, 0, 10}, 1);
  writePart(2, Part{0x77667453, 0, 3000, 2000, 1000}, 0);
  writePart(1, Part{0x77667453, 0, 3000, 1000, 1000}, 0);
  writePart(3, Part{0x77667453, 2, 7, 4, 3}, 2);
  writePart(0, Part{0x77667453, 0, 3000, 0, 1000}, 0);
  writePart(2, Part{0x77667453, 2, 7, 0, 4}, 2);
  const std::vector<size_t> sizes = {3000, 10, 7};
  for (uint64_t m = 0; m < sizes.size(); ++m) {
    size_t bytes = 0;
    ncclResult_t result = ncclSuccess;
    const uint8_t* data = receive(&bytes, &result);
    ASSERT_NE(data, nullptr) << "message " << m << ": " << (result == ncclSuccess ? "not whole" : lastErrorMessage());
    ASSERT_EQ(bytes, sizes[m]);
    for (size_t i = 0; i < bytes; ++i) ASSERT_EQ(data[i], byteOf(m, i)) << "message " << m << " byte " << i;
    connection_->recvRelease();
  }
}

TEST_P(StripedTcp, PartPastItsMessageIsAnErrorNamingThePeer) {
  writePart(0, Part{0x77667453, 0, 100, 60, 50}, 0);
  size_t bytes = 0;
  ncclResult_t result = ncclSuccess;
  EXPECT_EQ(receive(&bytes, &result), nullptr);
  EXPECT_EQ(result, ncclSystemError);
  EXPECT_NE(lastErrorMessage().find("corrupt part from rank 3 (past its message's end"), std::string::npos)
      << lastErrorMessage();
}

TEST_P(StripedTcp, PartsOfOneMessageThatDisagreeOnItsSizeAreAnError) {
  writePart(0, Part{0x77667453, 0, 100, 0, 50}, 0);
  writePart(1, Part{0x77667453, 0, 200, 50, 50}, 0);
  size_t bytes = 0;
  ncclResult_t result = ncclSuccess;
  EXPECT_EQ(receive(&bytes, &result), nullptr);
  EXPECT_NE(lastErrorMessage().find("another size than its other parts"), std::string::npos) << lastErrorMessage();
}

TEST_P(StripedTcp, MessageLargerThanTheSlotIsRefusedBeforeItIsRead) {
  writePart(0, Part{0x77667453, 0, (512 << 10) + 1, 0, 0}, 0);
  size_t bytes = 0;
  ncclResult_t result = ncclSuccess;
  EXPECT_EQ(receive(&bytes, &result), nullptr);
  EXPECT_EQ(result, ncclInvalidUsage);
  EXPECT_NE(lastErrorMessage().find("above this rank's slot"), std::string::npos) << lastErrorMessage();
}

// Every socket closed with message 0 still missing a part: an error, not a wait.
TEST_P(StripedTcp, PeerThatClosesBeforeAMessageIsWholeIsAnError) {
  writePart(0, Part{0x77667453, 0, 2000, 0, 1000}, 0);
  for (int& fd : far_) {
    close(fd);
    fd = -1;
  }
  size_t bytes = 0;
  ncclResult_t result = ncclSuccess;
  EXPECT_EQ(receive(&bytes, &result), nullptr);
  EXPECT_EQ(result, ncclRemoteError);
  EXPECT_NE(lastErrorMessage().find("rank 3 closed the connection"), std::string::npos) << lastErrorMessage();
}

INSTANTIATE_TEST_SUITE_P(Threads, StripedTcp, ::testing::Values(1, 2), [](const ::testing::TestParamInfo<int>& info) {
  return info.param == 1 ? std::string("CallersThread") : std::string("TwoHelpers");
});

}  // namespace
