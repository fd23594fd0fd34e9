// The executor's hazard analysis: which earlier step each step must wait for, and whether it
// may go slice by slice.
#include <gtest/gtest.h>

#include "runtime/exec/executor.h"

using namespace weft;

namespace {

bool dependsOn(const PreparedSchedule& plan, size_t step, uint32_t on, bool* aligned = nullptr) {
  for (const auto& d : plan.dependencies[step])
    if (d.step == on) {
      if (aligned) *aligned = d.sliceAligned;
      return true;
    }
  return false;
}

TEST(ExecutorPlan, ChannelOrderSkipsEmptyStepsButNotTheMessagesBeforeThem) {
  Schedule s;
  s.steps.push_back({StepKind::Send, 1, {BufferKind::Send, 0, 100}, {}, {}});
  s.steps.push_back({StepKind::Send, 1, {BufferKind::Send, 100, 0}, {}, {}});  // empty chunk
  s.steps.push_back({StepKind::Send, 1, {BufferKind::Send, 200, 100}, {}, {}});
  PreparedSchedule plan;
  prepareSchedule(s, false, 64, &plan);
  EXPECT_TRUE(dependsOn(plan, 2, 0)) << "the third message must wait for the first, not only the empty one";
  EXPECT_EQ(plan.sliceCounts[0], 2u);
  EXPECT_EQ(plan.sliceCounts[1], 0u);
}

TEST(ExecutorPlan, ForwardingWaitsSliceBySliceOnTheReduction) {
  Schedule s;
  s.steps.push_back({StepKind::RecvReduce, 0, {BufferKind::Send, 0, 256}, {BufferKind::Recv, 0, 256}, {}});
  s.steps.push_back({StepKind::Send, 2, {BufferKind::Recv, 0, 256}, {}, {}});
  PreparedSchedule plan;
  prepareSchedule(s, false, 64, &plan);
  bool aligned = false;
  ASSERT_TRUE(dependsOn(plan, 1, 0, &aligned));
  EXPECT_TRUE(aligned);
}

// A reduction the next step forwards as it is goes straight into that Send's slots; not when
// something else touches the result first (an average's Divide), when the Send sends only part
// of it, or when the result is the receive buffer that an in-place call's Send reads.
TEST(ExecutorPlan, ReductionsForwardedAsTheyAreGoStraightToTheSend) {
  const BufferRange input{BufferKind::Send, 0, 256}, result{BufferKind::Recv, 0, 256};
  Schedule ring;
  ring.steps.push_back({StepKind::RecvReduce, 0, input, result, {}});
  ring.steps.push_back({StepKind::Send, 2, result, {}, {}});
  ring.steps.push_back({StepKind::Recv, 0, {}, {BufferKind::Recv, 256, 256}, {}});
  PreparedSchedule plan;
  prepareSchedule(ring, false, 64, &plan);
  EXPECT_EQ(plan.forwardedBy, (std::vector<int32_t>{1, -1, -1}));

  Schedule average = ring;
  average.steps.insert(average.steps.begin() + 1, Step{StepKind::Divide, -1, result, result, {}});
  prepareSchedule(average, false, 64, &plan);
  EXPECT_EQ(plan.forwardedBy[0], -1) << "the Send forwards the quotient, not the sum";

  Schedule part = ring;
  part.steps[1].src.bytes = 128;
  prepareSchedule(part, false, 64, &plan);
  EXPECT_EQ(plan.forwardedBy[0], -1) << "slices of different ranges do not line up";

  // Reduce into Recv at 256, then send Send at 256: the same bytes only when in place.
  Schedule aliased;
  aliased.steps.push_back({StepKind::RecvReduce, 0, {BufferKind::Send, 256, 256}, {BufferKind::Recv, 256, 256}, {}});
  aliased.steps.push_back({StepKind::Send, 2, {BufferKind::Send, 256, 256}, {}, {}});
  prepareSchedule(aliased, false, 64, &plan);
  EXPECT_EQ(plan.forwardedBy[0], -1) << "out of place the Send sends the input, not the result";
  prepareSchedule(aliased, true, 64, &plan);
  EXPECT_EQ(plan.forwardedBy[0], 1) << "in place the input is the result";
}

TEST(ExecutorPlan, InPlaceMakesSendAndRecvOneBuffer) {
  Schedule s;
  s.steps.push_back({StepKind::Recv, 0, {}, {BufferKind::Recv, 0, 128}, {}});
  s.steps.push_back({StepKind::Send, 1, {BufferKind::Send, 64, 128}, {}, {}});
  PreparedSchedule outOfPlace, inPlace;
  prepareSchedule(s, false, 64, &outOfPlace);
  prepareSchedule(s, true, 64, &inPlace);
  EXPECT_FALSE(dependsOn(outOfPlace, 1, 0));
  bool aligned = true;
  ASSERT_TRUE(dependsOn(inPlace, 1, 0, &aligned));
  EXPECT_FALSE(aligned) << "ranges differ: the whole step must finish first";
}

TEST(ExecutorPlan, FencesOrderEverything) {
  Schedule s;
  s.steps.push_back({StepKind::Copy, -1, {BufferKind::Send, 0, 64}, {BufferKind::Recv, 0, 64}, {}});
  s.steps.push_back({StepKind::Notify, 1, {}, {}, {}});
  s.steps.push_back({StepKind::WaitNotify, 1, {}, {}, {}});
  s.steps.push_back({StepKind::Copy, -1, {BufferKind::Recv, 1 << 20, 64, 1}, {BufferKind::Recv, 4096, 64}, {}});
  PreparedSchedule plan;
  prepareSchedule(s, false, 64, &plan);
  EXPECT_TRUE(dependsOn(plan, 1, 0));
  EXPECT_TRUE(dependsOn(plan, 2, 1));
  EXPECT_TRUE(dependsOn(plan, 3, 2));
  EXPECT_EQ(plan.sliceCounts[1], 1u);
}

}  // namespace
