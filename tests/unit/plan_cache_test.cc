// The communicator's plan cache: a plan is found only under a key equal in every field, so
// shapes whose hashes collide (the old folded key did for roots past 1031) never share one.
#include <gtest/gtest.h>

#include <vector>

#include "runtime/comm/communicator.h"
#include "runtime/exec/plan_cache.h"

using namespace weft;

namespace {

// A plan told apart from others by its step count.
PreparedSchedule planWithSteps(size_t steps) {
  PreparedSchedule plan;
  plan.schedule.steps.resize(steps);
  return plan;
}

uint64_t everyKeyCollides(const PlanKey&) { return 42; }

class PlanCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    comm.rank = 7;
    comm.nranks = 2048;
  }
  // Out of place, so the in-place fields are false for both collectives.
  CollectiveCall rooted(Collective collective, int root) {
    return makeCall(collective, &comm, send.data(), recv.data(), 1024, ncclFloat32, ncclSum, root);
  }
  PlanKey selectedKey(Collective collective, int root) {
    return planKeyFor(rooted(collective, root), PlanPath::Selected);
  }
  ncclComm comm;
  std::vector<float> send = std::vector<float>(1024);
  std::vector<float> recv = std::vector<float>(1024);
};

TEST_F(PlanCacheTest, BroadcastAndReduceWithRootsApartBy1031HaveDifferentKeys) {
  for (int r : {0, 1, 5, 1016}) {
    const PlanKey broadcast = selectedKey(Collective::Broadcast, 1031 + r);
    const PlanKey reduce = selectedKey(Collective::Reduce, r);
    EXPECT_FALSE(broadcast == reduce) << "root " << r;
    EXPECT_EQ(broadcast.root, 1031 + r);
    EXPECT_EQ(reduce.root, r);
  }
}

TEST_F(PlanCacheTest, BroadcastAndReduceWithRootsApartBy1031NeverHitEachOther) {
  for (int r : {0, 1, 5, 1016}) {
    PlanCache cache;
    const PlanKey broadcast = selectedKey(Collective::Broadcast, 1031 + r);
    const PlanKey reduce = selectedKey(Collective::Reduce, r);
    const PreparedSchedule* stored = cache.insert(broadcast, planWithSteps(3));
    EXPECT_EQ(cache.find(reduce), nullptr) << "reduce root " << r << " hit the broadcast's plan";
    EXPECT_EQ(cache.find(broadcast), stored);
    cache.insert(reduce, planWithSteps(5));
    ASSERT_NE(cache.find(broadcast), nullptr);
    ASSERT_NE(cache.find(reduce), nullptr);
    EXPECT_EQ(cache.find(broadcast)->schedule.steps.size(), 3u);
    EXPECT_EQ(cache.find(reduce)->schedule.steps.size(), 5u);
  }
}

TEST_F(PlanCacheTest, EqualHashesWithDifferentFieldsDoNotHit) {
  PlanCache cache(PlanCache::kDefaultCapacity, everyKeyCollides);
  const PlanKey base = selectedKey(Collective::Broadcast, 3);
  cache.insert(base, planWithSteps(1));

  std::vector<PlanKey> others(12, base);
  others[0].path = PlanPath::Direct;
  others[1].collective = Collective::Reduce;
  others[2].count += 1;
  others[3].datatype = ncclFloat64;
  others[4].average = true;
  others[5].preScale = true;
  others[6].root = 4;
  others[7].inPlace = true;
  others[8].sendAliasesRecv = true;
  others[9].path = PlanPath::Compressed;
  others[10].codec.blockSize *= 2;
  others[11].blockStride = base.count * 3;
  for (size_t i = 0; i < others.size(); ++i) {
    ASSERT_EQ(everyKeyCollides(others[i]), everyKeyCollides(base));
    EXPECT_FALSE(others[i] == base) << "variant " << i;
    EXPECT_EQ(cache.find(others[i]), nullptr) << "variant " << i << " hit another shape's plan";
  }
  ASSERT_NE(cache.find(base), nullptr);
  EXPECT_EQ(cache.find(base)->schedule.steps.size(), 1u);
}

TEST_F(PlanCacheTest, CompressedKeysDifferByCodec) {
  compression::CodecConfig int8;
  int8.kind = compression::CodecKind::kInt8;
  compression::CodecConfig topk;
  topk.kind = compression::CodecKind::kTopK;
  const CollectiveCall call = rooted(Collective::AllReduce, -1);
  const PlanKey compressedInt8 = planKeyFor(call, PlanPath::Compressed, int8);
  EXPECT_FALSE(compressedInt8 == planKeyFor(call, PlanPath::Compressed, topk));
  EXPECT_TRUE(compressedInt8 == planKeyFor(call, PlanPath::Compressed, int8));
  EXPECT_FALSE(compressedInt8 == planKeyFor(call, PlanPath::Selected));
}

TEST_F(PlanCacheTest, FullCacheReplacesTheOldestAndKeepsTheOthersInPlace) {
  PlanCache cache(2);
  const PlanKey a = selectedKey(Collective::Broadcast, 0);
  const PlanKey b = selectedKey(Collective::Broadcast, 1);
  const PlanKey c = selectedKey(Collective::Broadcast, 2);
  cache.insert(a, planWithSteps(1));
  const PreparedSchedule* planB = cache.insert(b, planWithSteps(2));
  cache.insert(c, planWithSteps(3));
  EXPECT_EQ(cache.find(a), nullptr);
  EXPECT_EQ(cache.find(b), planB);
  ASSERT_NE(cache.find(c), nullptr);
  EXPECT_EQ(cache.find(c)->schedule.steps.size(), 3u);
}

}  // namespace
