// The stream-ordered grid of tests/support/test_device.h (every collective, type, count and
// placement, two streams) on a real CUDA device: rank processes share GPU 0, buffers come from
// cudaMalloc, inputs and results cross with cudaMemcpyAsync. The same grid runs on the CPU
// device in the ordinary suite (stream_order_test); here it checks the CUDA side of the seam.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/support/multiprocess.h"
#include "tests/support/test_device.h"

#if defined(WEFT_HAVE_CUDA)
#include <cuda_runtime.h>
#endif

namespace weft::testing {
namespace {

// A rank process's exit status when it finds no usable device (the parent never touches CUDA:
// a process that initialized CUDA cannot fork children that use it).
constexpr int kNoDevice = 77;

#if defined(WEFT_HAVE_CUDA)

void check(cudaError_t error, const char* what) {
  if (error != cudaSuccess) {
    fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(error));
    abort();
  }
}

class CudaTestDevice : public TestDevice {
 public:
  ~CudaTestDevice() override {
    for (void* p : pinned_) cudaFreeHost(p);
  }
  const char* name() const override { return "cuda"; }
  // WEFT_TEST_DEVICE_ALLOC=ncclMemAlloc: buffers from ncclMemAlloc (cuMem, exportable: the direct
  // all-reduce maps them across the rank processes); else cudaMalloc's (the direct all-reduce
  // copies them through weft's own buffers). gpu-check.sh runs both.
  void* allocate(size_t bytes) override {
    void* p = nullptr;
    if (memAlloc_) {
      if (ncclMemAlloc(&p, bytes ? bytes : 1) != ncclSuccess) {
        fprintf(stderr, "ncclMemAlloc(%zu): %s\n", bytes, ncclGetLastError(nullptr));
        abort();
      }
    } else {
      check(cudaMalloc(&p, bytes), "cudaMalloc");
    }
    check(cudaMemset(p, 0, bytes), "cudaMemset");
    return p;
  }
  void release(void* pointer) override {
    if (memAlloc_)
      ncclMemFree(pointer);
    else
      cudaFree(pointer);
  }
  cudaStream_t createStream() override {
    cudaStream_t s = nullptr;
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    return s;
  }
  void destroyStream(cudaStream_t stream) override { cudaStreamDestroy(stream); }
  void synchronize(cudaStream_t stream) override { check(cudaStreamSynchronize(stream), "cudaStreamSynchronize"); }
  void write(cudaStream_t stream, void* device, std::vector<char> bytes) override {
    void* staging = pinned(bytes.size());
    memcpy(staging, bytes.data(), bytes.size());
    check(cudaMemcpyAsync(device, staging, bytes.size(), cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync in");
  }
  // Through pinned memory, so that the copy is truly asynchronous (a copy into pageable memory
  // would wait here for the stream), then into `host` by a host function.
  void read(cudaStream_t stream, void* host, const void* device, size_t bytes) override {
    auto* job = new ReadJob{host, pinned(bytes), bytes};
    check(cudaMemcpyAsync(job->pinned, device, bytes, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync out");
    check(cudaLaunchHostFunc(
              stream,
              [](void* argument) {
                auto* j = static_cast<ReadJob*>(argument);
                memcpy(j->host, j->pinned, j->bytes);
                delete j;
              },
              job),
          "cudaLaunchHostFunc");
  }
  void copy(cudaStream_t stream, void* dst, const void* src, size_t bytes) override {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync device");
  }

 private:
  const bool memAlloc_ = [] {
    const char* how = getenv("WEFT_TEST_DEVICE_ALLOC");
    return how && strcmp(how, "ncclMemAlloc") == 0;
  }();
  struct ReadJob {
    void* host;
    void* pinned;
    size_t bytes;
  };
  void* pinned(size_t bytes) {
    void* p = nullptr;
    check(cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocDefault), "cudaHostAlloc");
    pinned_.push_back(p);
    return p;
  }
  std::vector<void*> pinned_;
};

int rankOnDevice(int rank, int n, const ncclUniqueId& id) {
  // WEFT_TEST_FAKE_HOSTS=1: even and odd ranks on two fake hosts, so that large calls are staged
  // slice by slice between them (runtime/exec/staging_slices.h; gpu-check.sh step 4e).
  if (const char* fake = getenv("WEFT_TEST_FAKE_HOSTS"); fake && strcmp(fake, "1") == 0)
    setenv("WEFT_HOSTNAME", rank % 2 ? "gpu-check-host-b" : "gpu-check-host-a", 1);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return kNoDevice;
  check(cudaSetDevice(0), "cudaSetDevice");  // every rank on the one GPU
  CudaTestDevice device;
  return runStreamOrderedGrid(device, rank, n, id) == 0 ? 0 : 1;
}

#endif

class StreamOrderedCudaRanks : public ::testing::TestWithParam<int> {};

TEST_P(StreamOrderedCudaRanks, EveryCollectiveTypeAndPlacementMatchesTheReference) {
#if defined(WEFT_HAVE_CUDA)
  const int n = GetParam();
  auto outcomes = runRankProcesses(
      n, [&](int rank, const ncclUniqueId& id) { return rankOnDevice(rank, n, id); }, 300);
  bool noDevice = true;
  for (const RankOutcome& o : outcomes) noDevice = noDevice && o.exitCode == kNoDevice;
  if (noDevice) GTEST_SKIP() << "no usable CUDA device (cudaGetDeviceCount found none)";
  EXPECT_EQ(describeFailures(outcomes), "");
#else
  GTEST_SKIP() << "weft was built without CUDA (WEFT_HAVE_CUDA off)";
#endif
}

INSTANTIATE_TEST_SUITE_P(Ranks, StreamOrderedCudaRanks, ::testing::Values(2, 4));

}  // namespace
}  // namespace weft::testing
