// Calls between hosts on device memory, cut into slices for pipelined staging
// (runtime/exec/staging_slices.h), through the CPU implementation of the device seam: ranks on
// two fake hosts (WEFT_HOSTNAME) and slices of 64 KiB, so that calls of a few hundred KiB run as
// several calls, each its own stream batch. Results are checked against the reference, and the
// number of collectives each rank ran says that every call ran as its slices, on every rank
// alike (a rank that ran them whole would have hung its peers until the time-out).
#include <gtest/gtest.h>

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

constexpr size_t kSliceBytes = 64 << 10;

// One call of the sequence below.
struct Call {
  Collective collective;
  ncclDataType_t type;
  size_t count;
  ncclRedOp_t op = ncclSum;
  int root = 0;
  bool inPlace = false;
};

size_t slicesOf(const Call& c) {
  const size_t perSlice = kSliceBytes / dataTypeSize(c.type);
  return c.count * dataTypeSize(c.type) >= 2 * kSliceBytes ? (c.count + perSlice - 1) / perSlice : 1;
}

// Stream batches of a group on a device rank: each slice alone, the calls between together.
size_t batchesOf(const std::vector<Call>& group) {
  size_t batches = 0;
  bool lastWasSlice = true;
  for (const Call& c : group) {
    const bool cut = slicesOf(c) > 1;
    batches += cut ? slicesOf(c) : lastWasSlice ? 1 : 0;
    lastWasSlice = cut;
  }
  return batches;
}

// A rank's side of the calls: device memory on its stream where it has the CPU device, else
// host memory (a rank without a GPU beside ranks with one).
class RankCalls {
 public:
  RankCalls(int rank, int n, ncclComm_t comm, TestDevice* device) : rank_(rank), n_(n), comm_(comm), device_(device) {
    if (device_) {
      stream_ = device_->createStream();
      checks_ = std::make_unique<StreamChecks>(*device_, rank);
    }
  }
  ~RankCalls() {
    checks_.reset();
    if (device_) device_->destroyStream(stream_);
  }

  // Issues the call (inside a group where the caller opened one), its result to be read by
  // check(); false when it was refused.
  bool issue(const Call& c, unsigned seed) {
    const size_t bytes = c.count * dataTypeSize(c.type);
    const bool root = rank_ == c.root;
    char* send = nullptr;
    if (device_) {
      send = checks_->input(stream_, c.count, c.type, c.op, seed);
    } else {
      host_.push_back(std::vector<char>(bytes));
      send = host_.back().data();
      fillInput(send, c.count, rank_, c.type, c.op, seed);
    }
    char* recv = c.inPlace ? send : nullptr;
    if (!recv && device_) recv = checks_->deviceBuffer(bytes);
    if (!recv) {
      host_.push_back(std::vector<char>(bytes));
      recv = host_.back().data();
    }
    ncclResult_t r = ncclInvalidUsage;
    switch (c.collective) {
      case Collective::AllReduce: r = ncclAllReduce(send, recv, c.count, c.type, c.op, comm_, stream_); break;
      case Collective::Broadcast: r = ncclBroadcast(send, recv, c.count, c.type, c.root, comm_, stream_); break;
      default: r = ncclReduce(send, recv, c.count, c.type, c.op, c.root, comm_, stream_);
    }
    if (r != ncclSuccess) {
      fprintf(stderr, "rank %d: %s: %s\n", rank_, collectiveName(c.collective), ncclGetLastError(comm_));
      return false;
    }
    const std::string label = std::string(collectiveName(c.collective)) + " of " + std::to_string(c.count) + " " +
                              dataTypeName(c.type) + (c.inPlace ? " in place" : "");
    std::function<double(size_t)> expected;
    int reduced = n_;
    const int n = n_;
    if (c.collective == Collective::Broadcast) {
      expected = [=](size_t i) { return inputValue(c.root, i, c.type, c.op, seed); };
      reduced = 1;
    } else if (c.collective == Collective::AllReduce || root) {
      expected = [=](size_t i) { return expectedReduction(n, i, c.type, c.op, seed); };
    } else {
      return true;  // a reduce's output off the root: nothing to check
    }
    pending_.push_back([=, this] {
      if (device_) {
        checks_->expect(stream_, recv, c.count, c.type, expected, reduced, c.op, label);
      } else {
        wrong_ += countMismatchesAgainst(recv, c.count, c.type, expected, reduced, c.op, label.c_str());
      }
    });
    return true;
  }

  // Reads the results of the calls issued since the last time: after their group, where the
  // calls have reached the stream (or, on host memory, have run).
  void check() {
    for (const auto& read : pending_) read();
    pending_.clear();
  }

  // Wrong elements so far (after the stream's work).
  size_t wrong() {
    if (device_) device_->synchronize(stream_);
    return wrong_ + (checks_ ? checks_->mismatches() : 0);
  }

 private:
  int rank_, n_;
  ncclComm_t comm_;
  TestDevice* device_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<StreamChecks> checks_;
  std::vector<std::vector<char>> host_;
  std::vector<std::function<void()>> pending_;
  size_t wrong_ = 0;
};

// Runs the calls on `n` ranks of two fake hosts; `hostRank`: that rank has no device and calls
// on host memory (-1: none). "" when every rank was right and ran every call as its slices.
std::string runCalls(int n, int hostRank, const std::vector<std::vector<Call>>& groups) {
  return describeFailures(runRankProcesses(
      n,
      [&](int rank, const ncclUniqueId& id) {
        setenv("WEFT_HOSTNAME", rank % 2 ? "hostB" : "hostA", 1);
        setenv("WEFT_STAGING_SLICE_BYTES", std::to_string(kSliceBytes).c_str(), 1);
        std::unique_ptr<CpuTestDevice> device;
        if (rank != hostRank) device = std::make_unique<CpuTestDevice>();
        ncclComm_t comm;
        if (ncclCommInitRank(&comm, n, id, rank) != ncclSuccess) return 1;
        int status = 0;
        {
          RankCalls calls(rank, n, comm, device.get());
          unsigned seed = 500;
          size_t expectedRuns = 0, expectedBatches = 0;
          for (const std::vector<Call>& group : groups) {
            if (group.size() > 1) ncclGroupStart();
            for (const Call& c : group) {
              if (!calls.issue(c, ++seed)) status = 2;
              expectedRuns += slicesOf(c);
            }
            expectedBatches += batchesOf(group);
            if (group.size() > 1 && ncclGroupEnd() != ncclSuccess) status = 2;
            calls.check();
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
          // One stream, so one flag wait per batch: the slices went to the streams apart, so
          // that the stream copies slice k back while later ones are on the network.
          if (device && device->cpu().flagWaits() != expectedBatches) {
            fprintf(stderr, "rank %d: %llu stream batches, %zu expected\n", rank,
                    (unsigned long long)device->cpu().flagWaits(), expectedBatches);
            status = 7;
          }
        }
        if (ncclCommDestroy(comm) != ncclSuccess) status = 6;
        return status;
      },
      120));
}

// Calls of several slices (a tail slice too, and 8-byte and 2-byte types), each root, in place
// and not, and a group in which cut calls sit between calls that are not.
std::vector<std::vector<Call>> callsFor(int n) {
  std::vector<std::vector<Call>> groups = {
      {{Collective::AllReduce, ncclFloat32, 100000, ncclSum}},
      {{Collective::AllReduce, ncclFloat32, 100000, ncclAvg, 0, true}},
      {{Collective::AllReduce, ncclFloat16, 70001, ncclMax}},
      {{Collective::AllReduce, ncclFloat64, 20000, ncclSum}},  // 160000 bytes: 3 slices
      {{Collective::AllReduce, ncclFloat32, 1000, ncclSum}},   // not cut
      {{Collective::AllReduce, ncclFloat32, 40000, ncclMin},
       {Collective::Broadcast, ncclFloat32, 50000, ncclSum, n - 1},
       {Collective::AllReduce, ncclInt32, 300, ncclSum},
       {Collective::Reduce, ncclFloat32, 50000, ncclSum, 1 % n}},
  };
  for (int root = 0; root < n; ++root) {
    groups.push_back({{Collective::Broadcast, ncclFloat32, 60000, ncclSum, root, root % 2 == 1}});
    groups.push_back({{Collective::Reduce, ncclFloat32, 60000, ncclSum, root, root % 2 == 0}});
  }
  return groups;
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

INSTANTIATE_TEST_SUITE_P(Ranks, PipelinedStaging, ::testing::Values(2, 3));

}  // namespace
