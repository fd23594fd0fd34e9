// Host-memory collectives on a GPU machine leave the GPU alone: a CPU-only job must not pay for a
// CUDA context (hundreds of MiB of GPU memory per process). weft asks CUDA where a buffer lives
// of the driver (cuPointerGetAttributes, runtime/device/cuda_device.cc), and switches devices only
// for stream work. A child process that touches CUDA only through weft runs host all-reduces,
// then asks the driver whether any device's primary context became active; as a control it then
// creates one and checks that the driver reports it. Skipped, with the reason, without a GPU.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

#include "nccl.h"

#if defined(WEFT_HAVE_CUDA)
#include <cuda.h>
#include <cuda_runtime.h>

#include "tests/support/cuda_gpu.h"
#endif

namespace {

#if defined(WEFT_HAVE_CUDA)

constexpr int kNoGpu = 77;
constexpr int kContextCreated = 3;
constexpr int kNoPrimaryState = 4;
constexpr int kControlUnseen = 5;

using PrimaryState = decltype(&::cuDevicePrimaryCtxGetState);

PrimaryState primaryStateFunction() {
  return weft::testing::driverFunction<PrimaryState>("cuDevicePrimaryCtxGetState");
}

// The first device whose primary context is active, -1 for none, -2 when the driver cannot say.
int activeDevice(PrimaryState primaryState, int devices) {
  for (int d = 0; d < devices; ++d) {
    unsigned flags = 0;
    int active = 0;
    if (primaryState(d, &flags, &active) != CUDA_SUCCESS) return -2;
    if (active) return d;
  }
  return -1;
}

// In the child: 0 when the collectives were right and no primary context is active.
int hostCollectivesThenCheck() {
  alarm(50);  // a hang ends the child, not the test's time-out
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return kNoGpu;
  constexpr int kRanks = 2;
  constexpr size_t kCount = 1 << 16;
  // Initialized in a group, so that each rank records the caller's device (cudaGetDevice).
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) return 1;
  ncclComm_t comms[kRanks];
  if (ncclGroupStart() != ncclSuccess) return 1;
  for (int r = 0; r < kRanks; ++r)
    if (ncclCommInitRank(&comms[r], kRanks, id, r) != ncclSuccess) return 1;
  if (ncclGroupEnd() != ncclSuccess) return 1;
  std::vector<std::vector<float>> buffers(kRanks, std::vector<float>(kCount));
  for (int r = 0; r < kRanks; ++r)
    for (size_t i = 0; i < kCount; ++i) buffers[r][i] = static_cast<float>(i % 13 + r);
  for (int round = 0; round < 3; ++round) {
    if (ncclGroupStart() != ncclSuccess) return 1;
    for (int r = 0; r < kRanks; ++r)
      if (ncclAllReduce(buffers[r].data(), buffers[r].data(), kCount, ncclFloat32, ncclSum, comms[r], nullptr) !=
          ncclSuccess)
        return 1;
    if (ncclGroupEnd() != ncclSuccess) return 1;
  }
  for (int r = 0; r < kRanks; ++r) {
    if (ncclCommDestroy(comms[r]) != ncclSuccess) return 1;
    for (size_t i = 0; i < kCount; ++i)  // 3 rounds of doubling the two ranks' sum
      if (buffers[r][i] != static_cast<float>((2 * (i % 13) + 1) * 4)) return 2;
  }
  const PrimaryState primaryState = primaryStateFunction();
  if (!primaryState) return kNoPrimaryState;
  const int active = activeDevice(primaryState, devices);
  if (active == -2) return kNoPrimaryState;
  if (active >= 0) {
    fprintf(stderr, "device %d's primary context is active after host-memory collectives\n", active);
    return kContextCreated;
  }
  // The control: a context made now is seen, so the check above could have seen weft's.
  if (cudaFree(nullptr) != cudaSuccess || activeDevice(primaryState, devices) < 0) return kControlUnseen;
  return 0;
}

// The parent never touches CUDA (a process that did cannot fork children that use it).
TEST(HostPathCuda, HostCollectivesCreateNoCudaContext) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(hostCollectivesThenCheck());
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died (status " << status << ")";
  const int code = WEXITSTATUS(status);
  if (code == kNoGpu) GTEST_SKIP() << "no usable CUDA device";
  const char* what = code == 0                 ? ""
                     : code == 1               ? "a collective or the communicators failed"
                     : code == 2               ? "wrong all-reduce results"
                     : code == kContextCreated ? "weft created a CUDA context for host-memory collectives"
                     : code == kNoPrimaryState ? "the driver could not report its primary contexts"
                     : code == kControlUnseen  ? "the control context was not seen: the check cannot see contexts"
                                               : "unexpected exit status";
  EXPECT_EQ(code, 0) << what << " (exit status " << code << ")";
}

#else

TEST(HostPathCuda, HostCollectivesCreateNoCudaContext) {
  GTEST_SKIP() << "weft was built without CUDA (WEFT_HAVE_CUDA off)";
}

#endif

}  // namespace
