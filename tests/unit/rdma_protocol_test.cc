// The verbs transport's protocol (transport/ibverbs/rdma_connection.h) on the CPU: two
// RdmaConnections joined by an in-memory queue pair that keeps RC's rules (writes land whole
// and in order, each write with immediate consumes one posted receive at the peer, a signaled
// write completes after it landed) and refuses what real hardware would punish: a write with
// no receive posted (receiver not ready) or outside the peer's registered ring.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "transport/ibverbs/rdma_connection.h"

namespace weft {
namespace {

using Clock = std::chrono::steady_clock;

// Both ends of an in-memory RC queue pair.
class FakeRcLink {
 public:
  struct End {
    std::vector<char> sendRing, receiveRing;
    std::deque<uint64_t> postedReceives;
    std::deque<RdmaCompletion> completions;
  };

  FakeRcLink(size_t slotBytes, uint32_t slots) : slots_(slots) {
    for (End& end : ends_) {
      end.sendRing.assign(slotBytes * slots, 0);
      end.receiveRing.assign(slotBytes * slots, 0);
    }
  }
  RdmaRings rings(int side) {
    End& end = ends_[side];
    return RdmaRings{end.sendRing.data(), end.receiveRing.data(), end.sendRing.size() / slots(), slots()};
  }
  uint32_t slots() const { return slots_; }
  // From now on every posted work request fails, as after a link or peer failure.
  void breakLink() {
    std::lock_guard<std::mutex> lock(mutex_);
    broken_ = true;
    for (End& end : ends_) {
      for (uint64_t id : end.postedReceives)
        end.completions.push_back({RdmaCompletion::Arrived, id, 0, false, "work request flushed"});
      end.postedReceives.clear();
    }
  }
  std::string violation() {
    std::lock_guard<std::mutex> lock(mutex_);
    return violation_;
  }

  ncclResult_t write(int side, uint64_t id, const void* local, size_t bytes, uint64_t remoteOffset, uint32_t imm) {
    std::lock_guard<std::mutex> lock(mutex_);
    End& me = ends_[side];
    End& peer = ends_[1 - side];
    if (broken_) {
      me.completions.push_back({RdmaCompletion::WriteDone, id, 0, false, "transport retry counter exceeded"});
      return ncclSuccess;
    }
    if (peer.postedReceives.empty()) {
      violation_ = "a write with immediate found no receive posted (RNR)";
      me.completions.push_back({RdmaCompletion::WriteDone, id, 0, false, "RNR retry counter exceeded"});
      return ncclSuccess;
    }
    if (remoteOffset + bytes > peer.receiveRing.size()) {
      violation_ = "a write outside the peer's registered ring";
      me.completions.push_back({RdmaCompletion::WriteDone, id, 0, false, "remote access error"});
      return ncclSuccess;
    }
    const char* source = static_cast<const char*>(local);
    if (bytes && (source < me.sendRing.data() || source + bytes > me.sendRing.data() + me.sendRing.size()))
      violation_ = "a write from outside this side's registered ring";
    if (bytes) memcpy(peer.receiveRing.data() + remoteOffset, local, bytes);
    peer.completions.push_back({RdmaCompletion::Arrived, peer.postedReceives.front(), imm, true, nullptr});
    peer.postedReceives.pop_front();
    me.completions.push_back({RdmaCompletion::WriteDone, id, 0, true, nullptr});
    return ncclSuccess;
  }
  ncclResult_t receive(int side, uint64_t id) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (broken_)
      ends_[side].completions.push_back({RdmaCompletion::Arrived, id, 0, false, "work request flushed"});
    else
      ends_[side].postedReceives.push_back(id);
    return ncclSuccess;
  }
  ncclResult_t poll(int side, RdmaCompletion* out, int capacity, int* count) {
    std::lock_guard<std::mutex> lock(mutex_);
    End& me = ends_[side];
    *count = 0;
    while (*count < capacity && !me.completions.empty()) {
      out[(*count)++] = me.completions.front();
      me.completions.pop_front();
    }
    return ncclSuccess;
  }

 private:
  std::mutex mutex_;
  End ends_[2];
  uint32_t slots_;
  bool broken_ = false;
  std::string violation_;
};

class FakeQueue : public RdmaQueue {
 public:
  FakeQueue(FakeRcLink* link, int side) : link_(link), side_(side) {}
  ncclResult_t postWrite(uint64_t id, const void* local, size_t bytes, uint64_t remoteOffset,
                         uint32_t immediate) override {
    return link_->write(side_, id, local, bytes, remoteOffset, immediate);
  }
  ncclResult_t postReceive(uint64_t id) override { return link_->receive(side_, id); }
  ncclResult_t poll(RdmaCompletion* out, int capacity, int* count) override {
    return link_->poll(side_, out, capacity, count);
  }

 private:
  FakeRcLink* link_;
  int side_;
};

uint8_t patternByte(uint64_t index, size_t position) {
  return static_cast<uint8_t>(index * 131 + position * 7 + (position >> 8));
}

class RdmaProtocol : public ::testing::Test {
 protected:
  void connect(size_t slotBytes, uint32_t slots) {
    link_ = std::make_unique<FakeRcLink>(slotBytes, slots);
    a_ = std::make_unique<RdmaConnection>(std::make_unique<FakeQueue>(link_.get(), 0), link_->rings(0), 1, "ibverbs");
    b_ = std::make_unique<RdmaConnection>(std::make_unique<FakeQueue>(link_.get(), 1), link_->rings(1), 0, "ibverbs");
    ASSERT_EQ(a_->start(), ncclSuccess);
    ASSERT_EQ(b_->start(), ncclSuccess);
  }
  void TearDown() override {
    if (link_) {
      EXPECT_EQ(link_->violation(), "");
    }
  }

  std::unique_ptr<FakeRcLink> link_;
  std::unique_ptr<RdmaConnection> a_, b_;
};

// One end driven as the executor drives it: sends as room appears, receives and checks. An
// iteration that moved nothing yields: the two ends spin against each other, and with more
// spinning threads than cores (ctest -j2 runs two of these tests at once) a spinner that
// never yields holds its core for a whole time slice per hand-off (20 s instead of 0.3 s).
std::string exchange(Connection* c, uint64_t sendSalt, uint64_t receiveSalt, const std::vector<size_t>& sizes) {
  size_t sent = 0, received = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (sent < sizes.size() || received < sizes.size() || c->hasPendingSends()) {
    if (Clock::now() > deadline)
      return "deadline (sent " + std::to_string(sent) + ", received " + std::to_string(received) + ")";
    if (c->progress() != ncclSuccess) return lastErrorMessage();
    const size_t before = sent + received;
    void* buffer = nullptr;
    if (sent < sizes.size()) {
      if (c->sendBuffer(sizes[sent], &buffer) != ncclSuccess) return lastErrorMessage();
      if (buffer) {
        for (size_t i = 0; i < sizes[sent]; ++i) static_cast<uint8_t*>(buffer)[i] = patternByte(sendSalt + sent, i);
        if (c->sendCommit(sizes[sent]) != ncclSuccess) return lastErrorMessage();
        ++sent;
      }
    }
    const void* data = nullptr;
    size_t bytes = 0;
    if (received < sizes.size()) {
      if (c->recvPeek(&data, &bytes) != ncclSuccess) return lastErrorMessage();
      if (data) {
        if (bytes != sizes[received]) return "message " + std::to_string(received) + ": wrong length";
        for (size_t i = 0; i < bytes; ++i)
          if (static_cast<const uint8_t*>(data)[i] != patternByte(receiveSalt + received, i))
            return "message " + std::to_string(received) + " differs at byte " + std::to_string(i);
        c->recvRelease();
        ++received;
      }
    }
    if (sent + received == before) std::this_thread::yield();
  }
  return "";
}

TEST_F(RdmaProtocol, KeepsOrderAndBytesBothWaysAcrossManyMessagesOfVaryingSize) {
  connect(4096, 4);
  std::vector<size_t> sizes = {0, 1, 4096, 7, 64, 4096, 0, 0, 3};
  for (uint64_t i = 0; sizes.size() < 20000; ++i) sizes.push_back((i * 2654435761u) % 4097);
  std::string errorB;
  std::thread other([&] { errorB = exchange(b_.get(), 1000000, 0, sizes); });
  std::string errorA = exchange(a_.get(), 0, 1000000, sizes);
  other.join();
  EXPECT_EQ(errorA, "");
  EXPECT_EQ(errorB, "");
}

TEST_F(RdmaProtocol, OneSlotRingStillFlowsOnCredits) {
  connect(256, 1);
  std::vector<size_t> sizes(5000, 256);
  std::string errorB;
  std::thread other([&] { errorB = exchange(b_.get(), 7, 3, sizes); });
  std::string errorA = exchange(a_.get(), 3, 7, sizes);
  other.join();
  EXPECT_EQ(errorA, "");
  EXPECT_EQ(errorB, "");
}

// The receiver reports credits half a ring at a time: the sender stays stopped after one
// release and resumes, with room for two, after the second.
TEST_F(RdmaProtocol, SenderStopsAtTheReceiversCreditsAndResumesWhenHalfTheRingIsReleased) {
  connect(1024, 4);
  uint64_t sent = 0;
  auto sendWhatFits = [&] {
    for (int attempt = 0; attempt < 100; ++attempt) {
      void* buffer = nullptr;
      ASSERT_EQ(a_->progress(), ncclSuccess);
      ASSERT_EQ(a_->sendBuffer(1024, &buffer), ncclSuccess);
      if (!buffer) continue;
      memset(buffer, static_cast<int>(sent), 1024);
      ASSERT_EQ(a_->sendCommit(1024), ncclSuccess);
      ++sent;
    }
  };
  auto receiveOne = [&](uint64_t expected) {
    const void* data = nullptr;
    size_t bytes = 0;
    ASSERT_EQ(b_->recvPeek(&data, &bytes), ncclSuccess);
    ASSERT_NE(data, nullptr) << "message " << expected;
    EXPECT_EQ(bytes, 1024u);
    EXPECT_EQ(static_cast<const uint8_t*>(data)[1023], static_cast<uint8_t>(expected)) << "overwritten?";
    b_->recvRelease();
  };
  sendWhatFits();
  EXPECT_EQ(sent, 4u) << "the sender may write exactly the receiver's ring ahead";
  EXPECT_FALSE(a_->hasPendingSends()) << "every write was acknowledged";
  receiveOne(0);
  sendWhatFits();
  EXPECT_EQ(sent, 4u) << "one release is not reported yet";
  receiveOne(1);
  sendWhatFits();
  EXPECT_EQ(sent, 6u) << "two releases, half the ring, are";
  for (uint64_t expected = 2; expected < 6; ++expected) receiveOne(expected);
  const void* data = nullptr;
  size_t bytes = 0;
  ASSERT_EQ(b_->recvPeek(&data, &bytes), ncclSuccess);
  EXPECT_EQ(data, nullptr);
}

TEST_F(RdmaProtocol, OversizedMessageIsRefusedCleanly) {
  connect(512, 2);
  void* buffer = reinterpret_cast<void*>(1);
  EXPECT_EQ(a_->sendBuffer(513, &buffer), ncclInvalidUsage);
  EXPECT_EQ(buffer, nullptr);
  EXPECT_EQ(a_->sendCommit(1), ncclInvalidUsage);
}

TEST_F(RdmaProtocol, ABrokenLinkIsARemoteErrorNamingThePeer) {
  connect(512, 2);
  link_->breakLink();
  void* buffer = nullptr;
  ASSERT_EQ(a_->sendBuffer(8, &buffer), ncclRemoteError);
  EXPECT_NE(lastErrorMessage().find("rank 1"), std::string::npos) << lastErrorMessage();
  EXPECT_EQ(a_->checkPeer(), ncclRemoteError);
  const void* data = nullptr;
  size_t bytes = 0;
  EXPECT_EQ(b_->recvPeek(&data, &bytes), ncclRemoteError);
  EXPECT_NE(lastErrorMessage().find("rank 0"), std::string::npos) << lastErrorMessage();
}

}  // namespace
}  // namespace weft
