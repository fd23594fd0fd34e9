// runtime/exec/staging_slices.h: which calls are cut for pipelined staging, or into pieces that
// fit the own device buffers, and into what.
#include "runtime/exec/staging_slices.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "runtime/comm/communicator.h"
#include "runtime/exec/call_schedule.h"

namespace weft {
namespace {

constexpr size_t kSliceBytesPerRank = 1024;

class StagingSlicesTest : public ::testing::Test {
 protected:
  // Four ranks on two hosts, rank 2 with a device, slices of 4 x 1 KiB (1024 floats).
  void SetUp() override {
    comm.rank = 0;
    comm.nranks = 4;
    comm.layout.ranks.resize(4);
    for (int r = 0; r < 4; ++r) comm.layout.ranks[r].cudaDevice = r == 2 ? 0 : -1;
    comm.layout.localRanks = {0, 1};
    comm.agreed.stagingSliceBytes = kSliceBytesPerRank;
  }
  CollectiveCall call(Collective collective, size_t count, ncclDataType_t type = ncclFloat32) {
    return makeCall(collective, &comm, send.data(), recv.data(), count, type, ncclSum, 1);
  }
  ncclComm comm;
  std::vector<char> send = std::vector<char>(1 << 20);
  std::vector<char> recv = std::vector<char>(1 << 20);
};

TEST_F(StagingSlicesTest, AllReduceBroadcastAndReduceOfTwoSlicesOrMoreAreCut) {
  for (Collective c : {Collective::AllReduce, Collective::Broadcast, Collective::Reduce}) {
    EXPECT_EQ(stagingSliceCount(call(c, 2047)), 1u) << collectiveName(c) << ": under two slices";
    EXPECT_EQ(stagingSliceCount(call(c, 2048)), 2u) << collectiveName(c);
    EXPECT_EQ(stagingSliceCount(call(c, 2049)), 3u) << collectiveName(c) << ": a tail slice";
    EXPECT_EQ(stagingSliceCount(call(c, 4096, ncclFloat64)), 8u) << collectiveName(c) << ": slices of bytes";
    EXPECT_EQ(stagingSliceCount(call(c, 100000)), 8u) << collectiveName(c) << ": at most 8, larger";
  }
  comm.nranks = 8;  // slices of 8 x 1 KiB
  EXPECT_EQ(stagingSliceCount(call(Collective::AllReduce, 4095)), 1u) << "the slice grows with the rank count";
  EXPECT_EQ(stagingSliceCount(call(Collective::AllReduce, 4096)), 2u);
}

TEST_F(StagingSlicesTest, AtMostEightSlicesOfEqualSizeButTheLast) {
  std::vector<CollectiveCall> storage;
  const std::vector<CollectiveCall>& cut = cutIntoStagingSlices({call(Collective::AllReduce, 100001)}, &storage);
  ASSERT_EQ(cut.size(), 8u);
  for (size_t k = 0; k < 8; ++k) {
    EXPECT_EQ(cut[k].count, k < 7 ? 12501u : 100001u - 7 * 12501u) << "slice " << k;
    EXPECT_EQ(cut[k].sendbuff, send.data() + k * 12501 * sizeof(float)) << "slice " << k;
  }
}

TEST_F(StagingSlicesTest, AllGatherReduceScatterAndAllToAllAreCutInEveryBlockAtTheSameElements) {
  for (Collective c : {Collective::AllGather, Collective::ReduceScatter, Collective::AllToAll}) {
    // The count is one rank's block: slices of 1 KiB of it (256 floats), whatever the rank count.
    EXPECT_EQ(stagingSliceCount(call(c, 511)), 1u) << collectiveName(c) << ": under two slices";
    EXPECT_EQ(stagingSliceCount(call(c, 512)), 2u) << collectiveName(c);
    EXPECT_EQ(stagingSliceCount(call(c, 1 << 16)), 8u) << collectiveName(c) << ": at most 8";
    std::vector<CollectiveCall> storage;
    const std::vector<CollectiveCall>& cut = cutIntoStagingSlices({call(c, 1001)}, &storage);
    ASSERT_EQ(cut.size(), 4u) << collectiveName(c);
    for (size_t k = 0; k < 4; ++k) {
      EXPECT_EQ(cut[k].count, k < 3 ? 251u : 1001u - 3 * 251u) << collectiveName(c) << " slice " << k;
      EXPECT_EQ(cut[k].blockStride, 1001u) << collectiveName(c) << ": its blocks lie the call's block apart";
      EXPECT_EQ(cut[k].sendbuff, send.data() + k * 251 * sizeof(float)) << collectiveName(c) << " slice " << k;
      EXPECT_EQ(cut[k].recvbuff, recv.data() + k * 251 * sizeof(float)) << collectiveName(c) << " slice " << k;
      // Block r of the strided buffer starts r * 1001 elements after the slice's first element.
      const BufferSpans spans = bufferSpans(cut[k]);
      const size_t strided = (3 * 1001 + cut[k].count) * sizeof(float);
      if (c != Collective::ReduceScatter) {
        EXPECT_EQ(spans.recv, strided) << collectiveName(c);
      }
      if (c != Collective::AllGather) {
        EXPECT_EQ(spans.send, strided) << collectiveName(c);
      }
    }
  }
}

TEST_F(StagingSlicesTest, StridedSlicesAreMeasuredPerBlockWhateverTheRankCount) {
  comm.nranks = 8;
  for (Collective c : {Collective::AllGather, Collective::ReduceScatter, Collective::AllToAll}) {
    EXPECT_EQ(stagingSliceCount(call(c, 511)), 1u) << collectiveName(c);
    EXPECT_EQ(stagingSliceCount(call(c, 512)), 2u) << collectiveName(c);
  }
}

TEST_F(StagingSlicesTest, SlicesOfInPlaceAllGathersAndReduceScattersStayInPlace) {
  comm.rank = 2;
  const size_t count = 1001, block = count * sizeof(float);
  CollectiveCall gather = call(Collective::AllGather, count);
  gather.sendbuff = recv.data() + 2 * block;  // rank 2's block of the receive buffer
  CollectiveCall scatter = call(Collective::ReduceScatter, count);
  scatter.recvbuff = send.data() + 2 * block;  // rank 2's block of the send buffer
  ASSERT_TRUE(callIsInPlace(gather));
  ASSERT_TRUE(callIsInPlace(scatter));
  std::vector<CollectiveCall> storage;
  const std::vector<CollectiveCall>& cut = cutIntoStagingSlices({gather, scatter}, &storage);
  ASSERT_EQ(cut.size(), 8u);
  for (const CollectiveCall& slice : cut) {
    EXPECT_TRUE(callIsInPlace(slice)) << collectiveName(slice.kind.collective()) << " of " << slice.count;
    // The same slice read as if its blocks were back to back is not in place.
    CollectiveCall contiguous = slice;
    contiguous.blockStride = 0;
    EXPECT_FALSE(callIsInPlace(contiguous)) << collectiveName(slice.kind.collective());
    EXPECT_TRUE(callIsInPlace(contiguousView(slice))) << "as it runs on its blocks back to back";
  }
  // An all-to-all in place has one pointer for both buffers, whatever the stride.
  CollectiveCall exchange = call(Collective::AllToAll, count);
  exchange.recvbuff = send.data();
  storage.clear();
  for (const CollectiveCall& slice : cutIntoStagingSlices({exchange}, &storage)) {
    EXPECT_EQ(slice.sendbuff, slice.recvbuff);
    EXPECT_TRUE(callIsInPlace(slice));
    EXPECT_TRUE(callIsInPlace(contiguousView(slice)));
  }
}

// A gather's or scatter's block per rank lies in the root's buffer: sliced like an all-gather's
// (receive) or reduce-scatter's (send), strided at the root only.
TEST_F(StagingSlicesTest, GathersAndScattersAreCutStridedAtTheRoot) {
  for (Collective c : {Collective::Gather, Collective::Scatter}) {
    EXPECT_EQ(stagingSliceCount(call(c, 511)), 1u) << collectiveName(c);
    EXPECT_EQ(stagingSliceCount(call(c, 1 << 16)), 8u) << collectiveName(c);
    std::vector<CollectiveCall> storage;
    for (int rank : {0, 1}) {  // the root is 1
      comm.rank = rank;
      const std::vector<CollectiveCall>& cut = cutIntoStagingSlices({call(c, 1001)}, &storage);
      ASSERT_EQ(cut.size(), 4u) << collectiveName(c);
      const BufferSpans spans = bufferSpans(cut[1]);
      const size_t strided = rank == 1 ? (3 * 1001 + 251) * sizeof(float) : 0;
      EXPECT_EQ(c == Collective::Gather ? spans.recv : spans.send, strided) << collectiveName(c) << " rank " << rank;
      EXPECT_EQ(c == Collective::Gather ? spans.send : spans.recv, 251 * sizeof(float)) << collectiveName(c);
    }
    comm.rank = 0;
  }
}

TEST_F(StagingSlicesTest, OtherCollectivesOneHostNoDeviceOrScaledOperatorsAreNotCut) {
  CollectiveCall preMulSum = call(Collective::AllReduce, 1 << 16);
  preMulSum.op = static_cast<ncclRedOp_t>(ncclNumOps);
  EXPECT_EQ(stagingSliceCount(preMulSum), 1u) << "its scalar may be device memory, staged whole";
  comm.layout.localRanks = {0, 1, 2, 3};
  EXPECT_EQ(stagingSliceCount(call(Collective::AllReduce, 1 << 16)), 1u) << "one host";
  comm.layout.localRanks = {0, 1};
  comm.layout.ranks[2].cudaDevice = -1;
  EXPECT_EQ(stagingSliceCount(call(Collective::AllReduce, 1 << 16)), 1u) << "no device on any rank";
  comm.layout.ranks[2].cudaDevice = 0;
  comm.agreed.stagingSliceBytes = 0;
  EXPECT_EQ(stagingSliceCount(call(Collective::AllReduce, 1 << 16)), 1u) << "WEFT_STAGING_SLICE_BYTES=0";
}

TEST_F(StagingSlicesTest, SlicesCoverTheCallInOrderOverTheSameBuffers) {
  std::vector<CollectiveCall> calls = {call(Collective::Broadcast, 100), call(Collective::AllReduce, 2500),
                                       call(Collective::Reduce, 5000, ncclFloat16)};
  calls[1].recvbuff = send.data();  // in place
  calls[2].recvbuff = nullptr;      // a reduce's output off the root
  std::vector<CollectiveCall> storage;
  const std::vector<CollectiveCall>& cut = cutIntoStagingSlices(calls, &storage);
  ASSERT_EQ(&cut, &storage);
  // The broadcast whole; the all-reduce (10000 bytes: 3 slices) in 834 + 834 + 832 floats; the
  // reduce (10000 bytes) in 1667 + 1667 + 1666 halves.
  ASSERT_EQ(cut.size(), 1u + 3u + 3u);
  EXPECT_FALSE(cut[0].stagingSlice);
  EXPECT_EQ(cut[0].count, 100u);
  const size_t allReduceCounts[] = {834, 834, 832};
  for (size_t k = 0; k < 3; ++k) {
    const CollectiveCall& slice = cut[1 + k];
    EXPECT_TRUE(slice.stagingSlice);
    EXPECT_EQ(slice.kind, Collective::AllReduce);
    EXPECT_EQ(slice.count, allReduceCounts[k]);
    EXPECT_EQ(slice.sendbuff, send.data() + k * 834 * sizeof(float));
    EXPECT_EQ(slice.recvbuff, slice.sendbuff) << "in place stays in place";
  }
  for (size_t k = 0; k < 3; ++k) {
    const CollectiveCall& slice = cut[4 + k];
    EXPECT_EQ(slice.count, k < 2 ? 1667u : 1666u);
    EXPECT_EQ(slice.sendbuff, send.data() + k * 1667 * 2);
    EXPECT_EQ(slice.recvbuff, nullptr) << "an ignored buffer stays null";
    EXPECT_EQ(slice.root, 1);
  }
}

TEST_F(StagingSlicesTest, CallsNoneOfWhichIsCutAreReturnedAsTheyAre) {
  std::vector<CollectiveCall> calls = {call(Collective::AllReduce, 100), call(Collective::Gather, 100)};
  std::vector<CollectiveCall> storage;
  EXPECT_EQ(&cutIntoStagingSlices(calls, &storage), &calls);
  EXPECT_TRUE(storage.empty());
}

// On one host where every rank has a device: calls larger than the own device buffers
// (WEFT_OWN_DEVICE_BUFFER_BYTES, here 64 KiB) that the ranks take direct, in pieces that fit.
class OwnBufferPiecesTest : public StagingSlicesTest {
 protected:
  void SetUp() override {
    StagingSlicesTest::SetUp();
    comm.layout.localRanks = {0, 1, 2, 3};
    for (int r = 0; r < 4; ++r) comm.layout.ranks[r].cudaDevice = r;
    comm.agreed.direct = true;
    comm.agreed.directMinBytes = 1;
    comm.agreed.ownDeviceBufferBytes = 64 << 10;
  }
};

TEST_F(OwnBufferPiecesTest, AsManyPiecesAsTheLargerBufferNeedsOfEqualSizeButTheLast) {
  for (Collective c : {Collective::AllReduce, Collective::Broadcast, Collective::Reduce}) {
    EXPECT_EQ(stagingSliceCount(call(c, 16384)), 1u) << collectiveName(c) << ": fits";
    EXPECT_EQ(stagingSliceCount(call(c, 16385)), 2u) << collectiveName(c);
    EXPECT_EQ(stagingSliceCount(call(c, 20 * 16384)), 20u) << collectiveName(c) << ": no cap of 8";
  }
  std::vector<CollectiveCall> storage;
  const std::vector<CollectiveCall>& cut = cutIntoStagingSlices({call(Collective::AllReduce, 40000)}, &storage);
  // 160000 bytes: three pieces, each a whole number of 4 KiB (1024 floats) but the last.
  ASSERT_EQ(cut.size(), 3u);
  const size_t counts[] = {14336, 14336, 11328};
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(cut[k].count, counts[k]) << "piece " << k;
    EXPECT_EQ(cut[k].sendbuff, send.data() + k * 14336 * sizeof(float)) << "piece " << k;
    EXPECT_TRUE(cut[k].stagingSlice);
    EXPECT_TRUE(cut[k].ownBufferPiece) << "direct whatever its size";
    EXPECT_EQ(cut[k].blockStride, 0u);
  }
  // Rounded up, the pieces are as many as balanced ones would be; only the last is smaller.
  storage.clear();
  const std::vector<CollectiveCall>& tail = cutIntoStagingSlices({call(Collective::AllReduce, 262145)}, &storage);
  ASSERT_EQ(tail.size(), 17u);
  EXPECT_EQ(tail[0].count, 16384u);
  EXPECT_EQ(tail[16].count, 1u);
  // Own buffers smaller than 4 KiB a block: pieces as large as fit, unaligned.
  comm.agreed.ownDeviceBufferBytes = 65536;
  comm.nranks = 32;
  comm.layout.ranks.resize(32);
  comm.layout.localRanks.clear();
  for (int r = 0; r < 32; ++r) {
    comm.layout.ranks[r].cudaDevice = r;
    comm.layout.localRanks.push_back(r);
  }
  storage.clear();
  const std::vector<CollectiveCall>& small = cutIntoStagingSlices({call(Collective::AllGather, 1000)}, &storage);
  ASSERT_EQ(small.size(), 2u) << "512 floats of each of 32 blocks fit";
  EXPECT_EQ(small[0].count, 500u);
}

TEST_F(OwnBufferPiecesTest, AllGatherReduceScatterAndAllToAllPiecesFitWithEveryRanksBlock) {
  for (Collective c : {Collective::AllGather, Collective::ReduceScatter, Collective::AllToAll}) {
    // 4 ranks: a piece holds 64 KiB / 4 = 4096 floats of each block.
    EXPECT_EQ(stagingSliceCount(call(c, 4096)), 1u) << collectiveName(c);
    std::vector<CollectiveCall> storage;
    const std::vector<CollectiveCall>& cut = cutIntoStagingSlices({call(c, 4097)}, &storage);
    ASSERT_EQ(cut.size(), 2u) << collectiveName(c);
    EXPECT_EQ(cut[0].count, 3072u) << "a whole number of 4 KiB";
    EXPECT_EQ(cut[1].count, 1025u);
    for (size_t k = 0; k < 2; ++k) {
      const CollectiveCall& piece = cut[k];
      EXPECT_EQ(piece.sendbuff, send.data() + k * 3072 * sizeof(float)) << collectiveName(c) << " piece " << k;
      EXPECT_EQ(piece.recvbuff, recv.data() + k * 3072 * sizeof(float)) << collectiveName(c) << " piece " << k;
      EXPECT_EQ(piece.blockStride, 4097u) << collectiveName(c);
      const BufferSpans own = bufferSpans(contiguousView(piece));
      EXPECT_LE(std::max(own.send, own.recv), 64u << 10) << collectiveName(c) << ": its blocks back to back fit";
    }
  }
}

TEST_F(OwnBufferPiecesTest, OnlyCallsThatEveryRankMayTakeDirectAreCut) {
  const size_t large = 1 << 16;  // 256 KiB of floats
  CollectiveCall preMulSum = call(Collective::AllReduce, large);
  preMulSum.op = static_cast<ncclRedOp_t>(ncclNumOps);
  EXPECT_EQ(stagingSliceCount(preMulSum), 1u) << "its scalar may be device memory, staged whole";
  comm.layout.ranks[3].cudaDevice = -1;
  EXPECT_EQ(stagingSliceCount(call(Collective::AllReduce, large)), 1u) << "a rank without a device";
  comm.layout.ranks[3].cudaDevice = 3;
  comm.agreed.direct = false;
  EXPECT_EQ(stagingSliceCount(call(Collective::AllReduce, large)), 1u) << "WEFT_DIRECT=0";
  comm.agreed.direct = true;
  comm.agreed.directMinBytes = 1 << 20;
  EXPECT_EQ(stagingSliceCount(call(Collective::AllReduce, large)), 1u) << "below WEFT_DIRECT_MIN_BYTES";
  comm.agreed.directMinBytes = 1;
  comm.layout.localRanks = {0, 1};  // two hosts: slices for pipelined staging instead (at most 8)
  EXPECT_EQ(stagingSliceCount(call(Collective::AllReduce, large)), 8u);
}

}  // namespace
}  // namespace weft
