// Thread ranks: ncclCommInitAll driven from one thread through a group, and from a thread each;
// ncclCommInitRank inside a group; the queries on the resulting communicators.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "nccl.h"
#include "tests/support/reference.h"

using namespace weft::testing;

namespace {

constexpr int kRanks = 4;
constexpr size_t kCount = 100003;

TEST(InitAll, OneThreadDrivesAllRanksThroughAGroup) {
  ncclComm_t comms[kRanks];
  ASSERT_EQ(ncclCommInitAll(comms, kRanks, nullptr), ncclSuccess) << ncclGetLastError(nullptr);
  for (int r = 0; r < kRanks; ++r) {
    int count = 0, rank = -1;
    EXPECT_EQ(ncclCommCount(comms[r], &count), ncclSuccess);
    EXPECT_EQ(ncclCommUserRank(comms[r], &rank), ncclSuccess);
    EXPECT_EQ(count, kRanks);
    EXPECT_EQ(rank, r);
  }
  std::vector<std::vector<double>> send(kRanks, std::vector<double>(kCount)), recv = send;
  for (int r = 0; r < kRanks; ++r) fillInput(send[r].data(), kCount, r, ncclFloat64, ncclSum, 7);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < kRanks; ++r)
    ASSERT_EQ(ncclAllReduce(send[r].data(), recv[r].data(), kCount, ncclFloat64, ncclSum, comms[r], nullptr),
              ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  for (int r = 0; r < kRanks; ++r)
    EXPECT_EQ(countMismatches(recv[r].data(), kCount, kRanks, ncclFloat64, ncclSum, 7, "group"), 0u);
  for (auto* c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

TEST(InitAll, ThreadPerRank) {
  ncclComm_t comms[kRanks];
  ASSERT_EQ(ncclCommInitAll(comms, kRanks, nullptr), ncclSuccess) << ncclGetLastError(nullptr);
  std::vector<size_t> mismatches(kRanks, 1);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r)
    threads.emplace_back([&, r] {
      std::vector<float> data(kCount);
      size_t wrong = 0;
      for (unsigned iteration = 0; iteration < 5; ++iteration) {
        fillInput(data.data(), kCount, r, ncclFloat32, ncclMax, iteration);
        if (ncclAllReduce(data.data(), data.data(), kCount, ncclFloat32, ncclMax, comms[r], nullptr) != ncclSuccess)
          return;
        wrong += countMismatches(data.data(), kCount, kRanks, ncclFloat32, ncclMax, iteration, "thread");
      }
      mismatches[r] = wrong;
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(mismatches[r], 0u) << "rank " << r;
  for (auto* c : comms) ncclCommDestroy(c);
}

TEST(InitRank, GroupOfInitsFromOneThread) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comms[3];
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < 3; ++r) ASSERT_EQ(ncclCommInitRank(&comms[r], 3, id, r), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  std::vector<std::vector<int32_t>> data(3, std::vector<int32_t>(1001));
  for (int r = 0; r < 3; ++r) fillInput(data[r].data(), 1001, r, ncclInt32, ncclAvg, 3);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < 3; ++r)
    ASSERT_EQ(ncclAllReduce(data[r].data(), data[r].data(), 1001, ncclInt32, ncclAvg, comms[r], nullptr), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(countMismatches(data[r].data(), 1001, 3, ncclInt32, ncclAvg, 3, "avg"), 0u);
  for (auto* c : comms) ncclCommDestroy(c);
}

TEST(Version, ReportsNccl2289) {
  int version = 0;
  ASSERT_EQ(ncclGetVersion(&version), ncclSuccess);
  EXPECT_EQ(version, 22809);
  EXPECT_EQ(version, NCCL_VERSION(2, 28, 9));
}

}  // namespace
