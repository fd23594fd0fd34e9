// The simulator itself: broken schedules are reported (deadlock, unconsumed or mismatched
// messages, out-of-range steps, aliasing the executor could not see) rather than hanging, and a
// link model's costs add up along the critical path.
#include <gtest/gtest.h>

#include <vector>

#include "algorithms/builders/allgather.h"
#include "algorithms/simulation/simulator.h"

using namespace weft;

namespace {

struct TwoRanks {
  std::vector<char> send[2], recv[2];
  TwoRanks() {
    for (int r = 0; r < 2; ++r) {
      send[r].assign(16, static_cast<char>(r + 1));
      recv[r].assign(16, 0);
    }
  }
  std::vector<SimulatedBuffers> buffers() {
    std::vector<SimulatedBuffers> b(2);
    for (int r = 0; r < 2; ++r) b[r] = {send[r].data(), recv[r].data(), 16, 16};
    return b;
  }
};

Step sendStep(int peer, size_t bytes) { return {StepKind::Send, peer, {BufferKind::Send, 0, bytes}, {}, {}}; }
Step recvStep(int peer, size_t bytes) { return {StepKind::Recv, peer, {}, {BufferKind::Recv, 0, bytes}, {}}; }

TEST(Simulator, ExchangesMessages) {
  TwoRanks m;
  std::vector<Schedule> s(2);
  s[0].steps = {sendStep(1, 16), recvStep(1, 16)};
  s[1].steps = {sendStep(0, 16), recvStep(0, 16)};
  SimulationResult result = simulate(s, m.buffers());
  ASSERT_TRUE(result.ok) << result.error;
  EXPECT_EQ(m.recv[0], m.send[1]);
  EXPECT_EQ(m.recv[1], m.send[0]);
  EXPECT_EQ(result.messages, 2u);
  EXPECT_EQ(result.bytesMoved, 32u);
}

TEST(Simulator, MissingReceiveIsAnUnconsumedMessage) {
  TwoRanks m;
  std::vector<Schedule> s(2);
  s[0].steps = {sendStep(1, 16)};
  SimulationResult result = simulate(s, m.buffers());
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.error.find("unconsumed"), std::string::npos) << result.error;
}

TEST(Simulator, ReceivesWithNoSenderAreADeadlock) {
  TwoRanks m;
  std::vector<Schedule> s(2);
  s[0].steps = {recvStep(1, 16), sendStep(1, 16)};
  s[1].steps = {recvStep(0, 16), sendStep(0, 16)};  // both wait first: the in-order model deadlocks
  SimulationResult result = simulate(s, m.buffers());
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.error.find("deadlock"), std::string::npos) << result.error;
  EXPECT_NE(result.error.find("rank 1 step 0 (recv from rank 0)"), std::string::npos) << result.error;
}

TEST(Simulator, BrokenRingAllGatherIsReported) {
  // A ring all-gather with one receive dropped: the next message on that wire arrives where the
  // dropped one was expected, and a message is left over at the end, or a rank waits forever.
  const int n = 5;
  std::vector<std::vector<char>> send(n, std::vector<char>(4, 1)), recv(n, std::vector<char>(4 * n, 0));
  std::vector<Schedule> s;
  std::vector<SimulatedBuffers> b;
  for (int r = 0; r < n; ++r) {
    s.push_back(buildRingAllGather({.count = 4, .elementSize = 1, .rank = r, .nranks = n, .ringOrder = {}}));
    b.push_back({send[r].data(), recv[r].data(), 4, 4u * n});
  }
  auto& steps = s[2].steps;
  for (size_t i = 0; i < steps.size(); ++i)
    if (steps[i].kind == StepKind::Recv) {
      steps.erase(steps.begin() + i);
      break;
    }
  SimulationResult result = simulate(s, b);
  EXPECT_FALSE(result.ok);
  EXPECT_TRUE(result.error.find("unconsumed") != std::string::npos ||
              result.error.find("deadlock") != std::string::npos)
      << result.error;
}

TEST(Simulator, SizeMismatchAndOutOfRangeAreErrors) {
  TwoRanks m;
  std::vector<Schedule> s(2);
  s[0].steps = {sendStep(1, 8)};
  s[1].steps = {recvStep(0, 16)};
  SimulationResult result = simulate(s, m.buffers());
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.error.find("expected 16 bytes"), std::string::npos) << result.error;

  s[0].steps = {sendStep(1, 32)};
  s[1].steps = {recvStep(0, 32)};
  result = simulate(s, m.buffers());
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.error.find("outside its buffer"), std::string::npos) << result.error;
}

TEST(Simulator, FencesAreEmptyMessagesInOrder) {
  TwoRanks m;
  std::vector<Schedule> s(2);
  s[0].steps = {{StepKind::Notify, 1, {}, {}, {}}, sendStep(1, 16)};
  s[1].steps = {recvStep(0, 16)};  // finds the notify first
  SimulationResult result = simulate(s, m.buffers());
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.error.find("got a notify"), std::string::npos) << result.error;
  s[1].steps = {{StepKind::WaitNotify, 0, {}, {}, {}}, recvStep(0, 16)};
  EXPECT_TRUE(simulate(s, m.buffers()).ok);
}

TEST(Simulator, HiddenAliasingIsReported) {
  // Send lives inside Recv at an offset (NCCL's in-place all-gather). A schedule that reads the
  // own block through Send while a receive overwrites that block through Recv is unordered in
  // the executor's eyes; the simulator says so.
  std::vector<char> recv(8, 0);
  std::vector<SimulatedBuffers> b = {{recv.data() + 4, recv.data(), 4, 8}};
  Schedule s;
  s.steps = {{StepKind::Copy, -1, {BufferKind::Send, 0, 2}, {BufferKind::Recv, 0, 2}, {}},
             {StepKind::Copy, -1, {BufferKind::Recv, 2, 2}, {BufferKind::Recv, 4, 2}, {}}};
  SimulationResult result = simulate({s}, b);
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.error.find("hidden aliasing"), std::string::npos) << result.error;
  // Named through Recv, the same steps are ordered and fine.
  s.steps[0].src = {BufferKind::Recv, 4, 2};
  EXPECT_TRUE(simulate({s}, b).ok) << simulate({s}, b).error;
}

class LatencyBandwidth : public LinkModel {
 public:
  double transferTime(int, int, size_t bytes) const override { return 1.0 + bytes / 16.0; }
};

TEST(Simulator, LinkModelTimesTheCriticalPath) {
  TwoRanks m;
  std::vector<Schedule> s(2);
  s[0].steps = {sendStep(1, 16), recvStep(1, 16)};
  s[1].steps = {recvStep(0, 16), sendStep(0, 16)};  // rank 1 forwards after it has received
  LatencyBandwidth links;
  SimulationOptions options;
  options.links = &links;
  SimulationResult result = simulate(s, m.buffers(), options);
  ASSERT_TRUE(result.ok) << result.error;
  EXPECT_DOUBLE_EQ(result.finishTime[1], 2.0);
  EXPECT_DOUBLE_EQ(result.finishTime[0], 4.0);
  EXPECT_DOUBLE_EQ(result.time, 4.0);
  // Without a model nothing costs anything.
  EXPECT_DOUBLE_EQ(simulate(s, m.buffers()).time, 0.0);
}

}  // namespace
