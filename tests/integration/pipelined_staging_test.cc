// Calls between hosts on device memory, cut into slices for pipelined staging
// (runtime/exec/staging_slices.h), through the CPU implementation of the device seam: ranks on
// two fake hosts (WEFT_HOSTNAME) and slices of 32 KiB a rank, so that calls of a few hundred KiB
// run as several calls, each its own stream batch (all-gathers and reduce-scatters as strided
// slices: 32 KiB of every block). Results are checked against the reference;
// the number of collectives each rank ran says that every call ran as its slices, on every rank
// alike (a rank that ran one whole would have failed on the size mismatch or hung its peers),
// and the flag waits its streams got say how the calls were batched.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "nccl.h"
#include "runtime/comm/communicator.h"
#include "tests/support/multiprocess.h"
#include "tests/support/reference.h"
#include "tests/support/test_device.h"

using namespace weft;
using namespace weft::testing;

namespace {

constexpr size_t kSliceBytesPerRank = 32 << 10;
constexpr size_t kMostSlices = 8;
constexpr unsigned kPointToPointSeed = 777;  // the sender's input and the receiver's reference

enum class PointToPoint { None, SendToNext, ReceiveFromPrevious };

// One call of the sequence below.
struct Call {
  Collective collective;
  ncclDataType_t type;
  size_t count;
  ncclRedOp_t op = ncclSum;
  int root = 0;
  bool inPlace = false;
  PointToPoint pointToPoint = PointToPoint::None;  // instead of the collective
  bool secondStream = false;
  // A device rank's all-gather receive or reduce-scatter send buffer is host memory (the other
  // buffer device memory): that rank runs the strided slices on it, not staged. An all-to-all's
  // receive buffer is host memory: both its buffers are staged (a call has one stride).
  bool stridedOnHost = false;
};

bool blockPerRank(const Call& c) {
  return c.collective == Collective::AllGather || c.collective == Collective::ReduceScatter ||
         c.collective == Collective::AllToAll || c.collective == Collective::Gather ||
         c.collective == Collective::Scatter;
}

// The slices the library cuts `c` into on `n` ranks (staging_slices.h's rule, restated; an
// all-gather's or reduce-scatter's count is one rank's block, sliced at the slice a rank).
size_t slicesOf(const Call& c, int n) {
  const size_t bytes = c.count * dataTypeSize(c.type), slice = kSliceBytesPerRank * (blockPerRank(c) ? 1 : n);
  if (c.pointToPoint != PointToPoint::None || bytes < 2 * slice) return 1;
  const size_t slices = std::min(kMostSlices, (bytes + slice - 1) / slice);
  const size_t perSlice = (c.count + slices - 1) / slices;
  return (c.count + perSlice - 1) / perSlice;
}

// Stream batches of a group on a device rank: each slice alone, the calls between together,
// the sends and receives all in the batch of the first; each batch waited for on every stream
// of the group.
size_t flagWaitsOf(const std::vector<Call>& group, int n) {
  size_t batches = 0;
  bool lastWasSlice = true, pointToPointBatch = false;
  for (const Call& c : group) {
    const size_t slices = slicesOf(c, n);
    const bool isPointToPoint = c.pointToPoint != PointToPoint::None;
    if (isPointToPoint && pointToPointBatch) continue;
    if (slices > 1 || lastWasSlice) batches += slices;
    pointToPointBatch = pointToPointBatch || isPointToPoint;
    lastWasSlice = slices > 1;
  }
  const bool twoStreams = std::any_of(group.begin(), group.end(), [](const Call& c) { return c.secondStream; });
  return batches * (twoStreams ? 2 : 1);
}

// A rank's side of the calls: device memory on its streams where it has the CPU device, else
// host memory (a rank without a GPU beside ranks with one).
class RankCalls {
 public:
  RankCalls(int rank, int n, ncclComm_t comm, TestDevice* device) : rank_(rank), n_(n), comm_(comm), device_(device) {
    if (device_) {
      streams_[0] = device_->createStream();
      streams_[1] = device_->createStream();
      checks_ = std::make_unique<StreamChecks>(*device_, rank);
    }
  }
  ~RankCalls() {
    checks_.reset();
    if (device_)
      for (cudaStream_t s : streams_) device_->destroyStream(s);
  }

  // Issues the call (inside a group where the caller opened one), its result to be read by
  // check(); false when it was refused.
  bool issue(const Call& c, unsigned seed) {
    cudaStream_t stream = streams_[c.secondStream ? 1 : 0];
    if (c.pointToPoint != PointToPoint::None) seed = kPointToPointSeed;
    const size_t bytes = c.count * dataTypeSize(c.type);
    // An all-gather's receive buffer and a reduce-scatter's send buffer hold a block per rank;
    // in place, the other buffer is this rank's block of it.
    const bool gathers = c.collective == Collective::AllGather;
    const bool exchanges = c.collective == Collective::AllToAll;
    const bool rootGathers = c.collective == Collective::Gather, rootScatters = c.collective == Collective::Scatter;
    const size_t sendCount =
        c.collective == Collective::ReduceScatter || exchanges || rootScatters || (gathers && c.inPlace) ? n_ * c.count
                                                                                                         : c.count;
    const size_t recvBytes = gathers || exchanges || rootGathers ? n_ * bytes : bytes;
    const bool sendOnHost = !device_ || (c.stridedOnHost && c.collective == Collective::ReduceScatter);
    const bool recvOnHost = !device_ || (c.stridedOnHost && (gathers || exchanges));
    char* send = nullptr;
    if (!sendOnHost) {
      send = checks_->input(stream, sendCount, c.type, c.op, seed, rootScatters ? c.root : -1);
    } else {
      send = hostBuffer(sendCount * dataTypeSize(c.type));
      fillInput(send, sendCount, rank_, c.type, c.op, seed);
    }
    char* recv = c.inPlace ? send : recvOnHost ? hostBuffer(recvBytes) : checks_->deviceBuffer(recvBytes);
    // Off the root, a gather's output and a scatter's input are ignored: null, as NCCL allows.
    if (rootGathers && rank_ != c.root) recv = nullptr;
    if (rootScatters && rank_ != c.root) send = nullptr;
    if (c.inPlace && gathers) send = recv + rank_ * bytes;
    if (c.inPlace && c.collective == Collective::ReduceScatter) recv = send + rank_ * bytes;
    const int next = (rank_ + 1) % n_, previous = (rank_ + n_ - 1) % n_;
    ncclResult_t r = ncclInvalidUsage;
    if (c.pointToPoint == PointToPoint::SendToNext) {
      r = ncclSend(send, c.count, c.type, next, comm_, stream);
    } else if (c.pointToPoint == PointToPoint::ReceiveFromPrevious) {
      r = ncclRecv(recv, c.count, c.type, previous, comm_, stream);
    } else if (c.collective == Collective::AllReduce) {
      r = ncclAllReduce(send, recv, c.count, c.type, c.op, comm_, stream);
    } else if (c.collective == Collective::Broadcast) {
      r = ncclBroadcast(send, recv, c.count, c.type, c.root, comm_, stream);
    } else if (gathers) {
      r = ncclAllGather(send, recv, c.count, c.type, comm_, stream);
    } else if (c.collective == Collective::ReduceScatter) {
      r = ncclReduceScatter(send, recv, c.count, c.type, c.op, comm_, stream);
    } else if (exchanges) {
      r = ncclAlltoAll(send, recv, c.count, c.type, comm_, stream);
    } else if (rootGathers) {
      r = ncclGather(send, recv, c.count, c.type, c.root, comm_, stream);
    } else if (rootScatters) {
      r = ncclScatter(send, recv, c.count, c.type, c.root, comm_, stream);
    } else {
      r = ncclReduce(send, recv, c.count, c.type, c.op, c.root, comm_, stream);
    }
    if (r != ncclSuccess) {
      fprintf(stderr, "rank %d: %s: %s\n", rank_, collectiveName(c.collective), ncclGetLastError(comm_));
      return false;
    }
    const std::string label =
        (c.pointToPoint != PointToPoint::None ? std::string("receive") : std::string(collectiveName(c.collective))) +
        " of " + std::to_string(c.count) + " " + dataTypeName(c.type) + (c.inPlace ? " in place" : "");
    std::function<double(size_t)> expected;
    int reduced = n_;
    const int n = n_;
    if (c.pointToPoint == PointToPoint::ReceiveFromPrevious) {
      expected = [=](size_t i) { return inputValue(previous, i, c.type, c.op, seed); };
      reduced = 1;
    } else if (c.pointToPoint == PointToPoint::SendToNext) {
      return true;
    } else if (c.collective == Collective::Broadcast) {
      expected = [=](size_t i) { return inputValue(c.root, i, c.type, c.op, seed); };
      reduced = 1;
    } else if (gathers) {  // block q: rank q's input (in place: its block of its filled buffer)
      const size_t count = c.count;
      const bool inPlace = c.inPlace;
      expected = [=](size_t i) {
        const int q = static_cast<int>(i / count);
        return inputValue(q, inPlace ? i : i % count, c.type, c.op, seed);
      };
      reduced = 1;
    } else if (c.collective == Collective::ReduceScatter) {
      const size_t first = rank_ * c.count;
      expected = [=](size_t i) { return expectedReduction(n, first + i, c.type, c.op, seed); };
    } else if (rootGathers) {  // at the root, block q: rank q's input
      if (rank_ != c.root) return true;
      const size_t count = c.count;
      expected = [=](size_t i) { return inputValue(static_cast<int>(i / count), i % count, c.type, c.op, seed); };
      reduced = 1;
    } else if (rootScatters) {  // the root's block for this rank
      const size_t first = rank_ * c.count;
      expected = [=](size_t i) { return inputValue(c.root, first + i, c.type, c.op, seed); };
      reduced = 1;
    } else if (exchanges) {  // block q: rank q's input block for this rank
      const size_t count = c.count, first = rank_ * c.count;
      expected = [=](size_t i) {
        return inputValue(static_cast<int>(i / count), first + i % count, c.type, c.op, seed);
      };
      reduced = 1;
    } else if (c.collective == Collective::AllReduce || rank_ == c.root) {
      expected = [=](size_t i) { return expectedReduction(n, i, c.type, c.op, seed); };
    } else {
      return true;  // a reduce's output off the root: nothing to check
    }
    const size_t resultCount = gathers || exchanges || rootGathers ? n_ * c.count : c.count;
    pending_.push_back([=, this] {
      if (!recvOnHost) {
        checks_->expect(stream, recv, resultCount, c.type, expected, reduced, c.op, label);
      } else {
        if (device_) device_->synchronize(stream);  // a device call's result on host memory
        wrong_ += countMismatchesAgainst(recv, resultCount, c.type, expected, reduced, c.op, label.c_str());
      }
    });
    return true;
  }

  // Reads the results of the calls issued since the last time: after their group, where the
  // calls have reached the streams (or, on host memory, have run).
  void check() {
    for (const auto& read : pending_) read();
    pending_.clear();
  }

  // Wrong elements so far (after the streams' work).
  size_t wrong() {
    if (device_)
      for (cudaStream_t s : streams_) device_->synchronize(s);
    return wrong_ + (checks_ ? checks_->mismatches() : 0);
  }

 private:
  char* hostBuffer(size_t bytes) {
    host_.push_back(std::vector<char>(bytes));
    return host_.back().data();
  }

  int rank_, n_;
  ncclComm_t comm_;
  TestDevice* device_;
  cudaStream_t streams_[2] = {nullptr, nullptr};
  std::unique_ptr<StreamChecks> checks_;
  std::vector<std::vector<char>> host_;
  std::vector<std::function<void()>> pending_;
  size_t wrong_ = 0;
};

// Runs the calls on `n` ranks of two fake hosts; `hostRank`: that rank has no device and calls
// on host memory (-1: none). "" when every rank was right, ran every call as its slices, and
// (on the device) got the batches expected.
std::string runCalls(int n, int hostRank, const std::vector<std::vector<Call>>& groups,
                     uint64_t expectedStreamCopies = 0) {
  return describeFailures(runRankProcesses(
      n,
      [&](int rank, const ncclUniqueId& id) {
        setenv("WEFT_HOSTNAME", rank % 2 ? "hostB" : "hostA", 1);
        setenv("WEFT_STAGING_SLICE_BYTES", std::to_string(kSliceBytesPerRank).c_str(), 1);
        std::unique_ptr<CpuTestDevice> device;
        if (rank != hostRank) device = std::make_unique<CpuTestDevice>();
        ncclComm_t comm;
        if (ncclCommInitRank(&comm, n, id, rank) != ncclSuccess) return 1;
        int status = 0;
        {
          RankCalls calls(rank, n, comm, device.get());
          unsigned seed = 500;
          size_t expectedRuns = 0, expectedFlagWaits = 0;
          for (const std::vector<Call>& group : groups) {
            if (group.size() > 1) ncclGroupStart();
            bool pointToPoint = false;
            for (const Call& c : group) {
              if (!calls.issue(c, ++seed)) status = 2;
              // A group's sends and receives run as one.
              const bool isPointToPoint = c.pointToPoint != PointToPoint::None;
              if (!isPointToPoint || !pointToPoint) expectedRuns += slicesOf(c, n);
              pointToPoint = pointToPoint || isPointToPoint;
            }
            if (group.size() > 1 && ncclGroupEnd() != ncclSuccess) status = 2;
            calls.check();
            expectedFlagWaits += flagWaitsOf(group, n);
          }
          if (calls.wrong()) status = 3;
          ncclResult_t async = ncclSuccess;
          ncclCommGetAsyncError(comm, &async);
          if (async != ncclSuccess) {
            fprintf(stderr, "rank %d: %s\n", rank, ncclGetLastError(comm));
            status = 4;
          }
          if (comm->exec.collectiveSequence != expectedRuns) {
            fprintf(stderr, "rank %d: %llu collectives ran, %zu expected\n", rank,
                    (unsigned long long)comm->exec.collectiveSequence, expectedRuns);
            status = 5;
          }
          if (device && expectedStreamCopies && device->cpu().streamCopies() != expectedStreamCopies) {
            fprintf(stderr, "rank %d: %llu stream copies, %llu expected\n", rank,
                    (unsigned long long)device->cpu().streamCopies(), (unsigned long long)expectedStreamCopies);
            status = 8;
          }
          if (device && device->cpu().flagWaits() != expectedFlagWaits) {
            fprintf(stderr, "rank %d: %llu flag waits on its streams, %zu expected\n", rank,
                    (unsigned long long)device->cpu().flagWaits(), expectedFlagWaits);
            status = 7;
          }
        }
        if (ncclCommDestroy(comm) != ncclSuccess) status = 6;
        return status;
      },
      120));
}

std::vector<std::vector<Call>> stridedCalls();

// Calls of several slices (a tail slice too, more than 8 slices' worth, and 8-byte and 2-byte
// types), each root, in place and not; a group in which cut calls sit between calls that are
// not; sends and receives on both sides of a cut call (every rank receives first: they must run
// as one, as on a host-memory rank); a group on two streams.
std::vector<std::vector<Call>> callsFor(int n) {
  const Call receive{Collective::AllReduce, ncclFloat32, 5000, ncclSum, 0, false, PointToPoint::ReceiveFromPrevious};
  const Call send{Collective::AllReduce, ncclFloat32, 5000, ncclSum, 0, false, PointToPoint::SendToNext};
  std::vector<std::vector<Call>> groups = {
      {{Collective::AllReduce, ncclFloat32, 100000, ncclSum}},
      {{Collective::AllReduce, ncclFloat32, 100000, ncclAvg, 0, true}},
      {{Collective::AllReduce, ncclFloat16, 70001, ncclMax}},
      {{Collective::AllReduce, ncclFloat64, 20000, ncclSum}},
      {{Collective::AllReduce, ncclFloat32, 1000, ncclSum}},  // not cut
      {{Collective::AllReduce, ncclFloat32, 40000, ncclMin},
       {Collective::Broadcast, ncclFloat32, 50000, ncclSum, n - 1},
       {Collective::AllReduce, ncclInt32, 300, ncclSum},
       {Collective::Reduce, ncclFloat32, 50000, ncclSum, 1 % n}},
      {receive, {Collective::AllReduce, ncclFloat32, 60000, ncclSum}, send},
      {{Collective::AllReduce, ncclFloat32, 300, ncclSum, 0, false, PointToPoint::None, true},
       {Collective::AllReduce, ncclFloat32, 60000, ncclSum}},
  };
  for (int root = 0; root < n; ++root) {
    groups.push_back({{Collective::Broadcast, ncclFloat32, 60000, ncclSum, root, root % 2 == 1}});
    groups.push_back({{Collective::Reduce, ncclFloat32, 60000, ncclSum, root, root % 2 == 0}});
  }
  for (const std::vector<Call>& group : stridedCalls()) groups.push_back(group);
  return groups;
}

// All-gathers, reduce-scatters, all-to-alls, gathers and scatters, whose slices are strided (at
// the root, for the last two): in place and not, a tail slice, more than 8 slices' worth, 8-byte
// and 2-byte types, a group with calls that are not cut, and on device ranks strided buffers on
// host memory beside device ones.
std::vector<std::vector<Call>> stridedCalls() {
  return {
      {{Collective::AllGather, ncclFloat32, 30001}},
      {{Collective::AllGather, ncclFloat64, 20000, ncclSum, 0, true}},
      {{Collective::ReduceScatter, ncclFloat32, 30001, ncclSum}},
      {{Collective::ReduceScatter, ncclFloat16, 40000, ncclMax, 0, true}},
      {{Collective::ReduceScatter, ncclFloat32, 100000, ncclAvg}},
      {{Collective::AllGather, ncclFloat32, 20000, ncclSum, 0, true},
       {Collective::AllReduce, ncclFloat32, 300, ncclSum},
       {Collective::ReduceScatter, ncclFloat32, 20000, ncclSum}},
      {{Collective::AllGather, ncclFloat32, 30001, ncclSum, 0, false, PointToPoint::None, false, true}},
      {{Collective::ReduceScatter, ncclFloat32, 30001, ncclSum, 0, false, PointToPoint::None, false, true}},
      {{Collective::AllToAll, ncclFloat32, 30001}},
      {{Collective::AllToAll, ncclFloat64, 20000, ncclSum, 0, true}},
      {{Collective::AllToAll, ncclFloat16, 40000},
       {Collective::AllReduce, ncclFloat32, 300, ncclSum},
       {Collective::AllToAll, ncclFloat32, 20000, ncclSum, 0, true}},
      {{Collective::AllToAll, ncclFloat32, 30001, ncclSum, 0, false, PointToPoint::None, false, true}},
      {{Collective::Gather, ncclFloat32, 30001, ncclSum, 1}},
      {{Collective::Scatter, ncclFloat64, 20000, ncclSum, 0}},
      {{Collective::Gather, ncclFloat16, 40000, ncclSum, 0},
       {Collective::AllReduce, ncclFloat32, 300, ncclSum},
       {Collective::Scatter, ncclFloat32, 30001, ncclSum, 1}},
  };
}

class PipelinedStaging : public ::testing::TestWithParam<int> {};

TEST_P(PipelinedStaging, DeviceCallsBetweenHostsRunAsTheirSlices) {
  const int n = GetParam();
  EXPECT_EQ(runCalls(n, -1, callsFor(n)), "");
}

TEST_P(PipelinedStaging, ARankWithoutADeviceRunsTheSameSlicesOnHostMemory) {
  const int n = GetParam();
  EXPECT_EQ(runCalls(n, n - 1, callsFor(n)), "");
}

// Schedules with a range that spans blocks run a rank's strided slices on a contiguous copy in
// Scratch (algorithms/builders/strided_blocks.h): Bruck's rotation into place on rank 2 of 3 (one
// copy of two blocks), recursive halving's copy of its input into Scratch on rank 1 of 2 (the
// blocks of consecutive ranks in one copy), the Bruck all-to-all's rotation of its input. The rank on host memory does
// so beside staged ranks that run the contiguous slices, and every message must still match.
TEST_P(PipelinedStaging, StridedSlicesThroughScratchMatchTheStagedRanks) {
  const int n = GetParam();
  setenv("WEFT_ALGO", "allgather:bruck;reducescatter:rhd;alltoall:bruck", 1);
  const std::string failures = runCalls(n, n - 1, stridedCalls());
  unsetenv("WEFT_ALGO");
  EXPECT_EQ(failures, "");
}

// A staged rank moves a strided slice's blocks in one 2-D copy: per slice of an all-gather, its
// input in and the blocks out; of a reduce-scatter, the blocks in and its result out; of an
// all-to-all, the blocks in and the blocks out.
TEST_P(PipelinedStaging, EachSliceMovesItsBlocksInOneCopy) {
  const int n = GetParam();
  const std::vector<std::vector<Call>> groups = {{{Collective::AllGather, ncclFloat32, 30001}},
                                                 {{Collective::ReduceScatter, ncclFloat32, 30001, ncclSum}},
                                                 {{Collective::AllToAll, ncclFloat32, 30001}}};
  const uint64_t slices = slicesOf(groups[0][0], n) + slicesOf(groups[1][0], n) + slicesOf(groups[2][0], n);
  ASSERT_EQ(slices, 12u);
  EXPECT_EQ(runCalls(n, -1, groups, 2 * slices), "");  // (the test's own writes and reads are not stream copies)
}

INSTANTIATE_TEST_SUITE_P(Ranks, PipelinedStaging, ::testing::Values(2, 3));

}  // namespace
