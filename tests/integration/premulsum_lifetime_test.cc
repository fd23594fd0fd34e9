// PreMulSum operators live only as long as NCCL promises: "an operator may be destroyed as soon
// as the last NCCL function which is given that operator returns". PyTorch's coalesced
// reduce-scatter with a divide factor (FSDP) creates, uses and destroys one operator per call
// inside a group, so the slot of a destroyed operator is reused while earlier calls still wait
// in the group. Each queued call must keep the scalar it was made with (host-immediate) or the
// address it was given (device residence).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nccl.h"

namespace {

constexpr int kRanks = 2;
constexpr int kBuckets = 4;
constexpr size_t kCount = 1000;  // per rank, per bucket

// Rank r's input for bucket k, element i: a small integer, so every sum and product is exact.
float inputValue(int rank, int bucket, size_t i) { return static_cast<float>((rank + 1) * (bucket + 1) + i % 7); }

struct Ranks {
  ncclComm_t comms[kRanks];
  Ranks() { EXPECT_EQ(ncclCommInitAll(comms, kRanks, nullptr), ncclSuccess); }
  ~Ranks() {
    for (ncclComm_t comm : comms) ncclCommDestroy(comm);
  }
};

// Reduce-scatters kBuckets buckets in one group from one thread, driving both ranks; bucket k
// is scaled by scalars[k] through an operator created right before its call and destroyed
// right after it. Returns how many elements differ from the exact reference.
size_t coalescedReduceScatter(ncclScalarResidence_t residence, std::vector<float>& scalars, float changeTo) {
  Ranks ranks;
  std::vector<float> send[kRanks][kBuckets], recv[kRanks][kBuckets];
  for (int r = 0; r < kRanks; ++r)
    for (int k = 0; k < kBuckets; ++k) {
      send[r][k].resize(kCount * kRanks);
      for (size_t i = 0; i < send[r][k].size(); ++i) send[r][k][i] = inputValue(r, k, i);
      recv[r][k].assign(kCount, -1.0f);
    }
  EXPECT_EQ(ncclGroupStart(), ncclSuccess);
  for (int k = 0; k < kBuckets; ++k)
    for (int r = 0; r < kRanks; ++r) {
      ncclRedOp_t op;
      EXPECT_EQ(ncclRedOpCreatePreMulSum(&op, &scalars[k], ncclFloat32, residence, ranks.comms[r]), ncclSuccess);
      EXPECT_EQ(
          ncclReduceScatter(send[r][k].data(), recv[r][k].data(), kCount, ncclFloat32, op, ranks.comms[r], nullptr),
          ncclSuccess)
          << ncclGetLastError(ranks.comms[r]);
      EXPECT_EQ(ncclRedOpDestroy(op, ranks.comms[r]), ncclSuccess);
    }
  // Device residence reads the scalar when the collective runs: a change before the group ends
  // is seen. Host-immediate values were fixed at creation: the change is not.
  const std::vector<float> atCreation = scalars;
  for (float& s : scalars) s = changeTo;
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  size_t wrong = 0;
  for (int r = 0; r < kRanks; ++r)
    for (int k = 0; k < kBuckets; ++k) {
      const float scalar = residence == ncclScalarDevice ? changeTo : atCreation[k];
      for (size_t i = 0; i < kCount; ++i) {
        float expected = 0;
        for (int p = 0; p < kRanks; ++p) expected += scalar * inputValue(p, k, r * kCount + i);
        if (recv[r][k][i] != expected) ++wrong;
      }
    }
  // The communicators are still usable.
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(ncclCommGetAsyncError(ranks.comms[r], nullptr), ncclInvalidArgument);
  ncclResult_t state[kRanks];
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(ncclCommGetAsyncError(ranks.comms[r], &state[r]), ncclSuccess);
    EXPECT_EQ(state[r], ncclSuccess) << ncclGetLastError(ranks.comms[r]);
  }
  return wrong;
}

TEST(PreMulSumLifetime, HostImmediateOperatorDestroyedInsideGroupKeepsEachCallsScalar) {
  std::vector<float> scalars = {0.5f, 2.0f, 3.0f, 0.25f};
  EXPECT_EQ(coalescedReduceScatter(ncclScalarHostImmediate, scalars, 100.0f), 0u);
}

TEST(PreMulSumLifetime, DeviceResidenceOperatorDestroyedInsideGroupReadsItsAddressAtRun) {
  std::vector<float> scalars = {0.5f, 2.0f, 3.0f, 0.25f};
  EXPECT_EQ(coalescedReduceScatter(ncclScalarDevice, scalars, 4.0f), 0u);
}

// A destroyed operator handed to a later call fails that call only; the group and the
// communicator carry on.
TEST(PreMulSumLifetime, DestroyedOperatorFailsOnlyItsCall) {
  Ranks ranks;
  std::vector<float> x[kRanks];
  for (int r = 0; r < kRanks; ++r) x[r].assign(kCount, static_cast<float>(r + 1));
  ncclRedOp_t ops[kRanks];
  float scalar = 2.0f;
  EXPECT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(ncclRedOpCreatePreMulSum(&ops[r], &scalar, ncclFloat32, ncclScalarHostImmediate, ranks.comms[r]),
              ncclSuccess);
    EXPECT_EQ(ncclRedOpDestroy(ops[r], ranks.comms[r]), ncclSuccess);
    EXPECT_EQ(ncclAllReduce(x[r].data(), x[r].data(), kCount, ncclFloat32, ops[r], ranks.comms[r], nullptr),
              ncclInvalidArgument);
    EXPECT_NE(std::string(ncclGetLastError(ranks.comms[r])).find("op="), std::string::npos);
    EXPECT_EQ(ncclAllReduce(x[r].data(), x[r].data(), kCount, ncclFloat32, ncclSum, ranks.comms[r], nullptr),
              ncclSuccess);
  }
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(x[r][kCount - 1], 3.0f);
}

}  // namespace
