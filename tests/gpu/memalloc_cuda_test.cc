// ncclMemAlloc on a GPU: device memory of the current device from cuMem, whose handle exports as
// a POSIX file descriptor (what same-host peers will map), usable by CUDA and by collectives in
// stream order (two ranks of this process sharing the GPU), freed by ncclMemFree; and
// weftMemAllocHost still gives host memory. Skipped, with the reason, without a GPU.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "nccl.h"
#include "weft/weft.h"

#if defined(WEFT_HAVE_CUDA)
#include <cuda.h>
#include <cuda_runtime.h>

#include "tests/support/cuda_gpu.h"
#endif

namespace {

#if defined(WEFT_HAVE_CUDA)

using weft::testing::driverFunction;
using weft::testing::whyNoCudaGpu;

// Whether the driver makes cuMem memory with a POSIX fd handle on device 0 (CUDA_SUCCESS), else
// its refusal.
CUresult driverRefusesExportableMemory() {
  auto create = driverFunction<decltype(&::cuMemCreate)>("cuMemCreate");
  auto granularity = driverFunction<decltype(&::cuMemGetAllocationGranularity)>("cuMemGetAllocationGranularity");
  auto release = driverFunction<decltype(&::cuMemRelease)>("cuMemRelease");
  if (!create || !granularity || !release) return CUDA_ERROR_NOT_SUPPORTED;
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  size_t unit = 0;
  CUresult r = granularity(&unit, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  if (r != CUDA_SUCCESS) return r;
  CUmemGenericAllocationHandle handle = 0;
  if ((r = create(&handle, unit, &prop, 0)) != CUDA_SUCCESS) return r;
  release(handle);
  return CUDA_SUCCESS;
}

class MemAllocCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = whyNoCudaGpu();
    if (!why.empty()) GTEST_SKIP() << why;
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  }
};

TEST_F(MemAllocCuda, GivesDeviceMemoryOfTheCurrentDevice) {
  constexpr size_t kBytes = (1 << 20) + 3;
  void* p = nullptr;
  ASSERT_EQ(ncclMemAlloc(&p, kBytes), ncclSuccess) << ncclGetLastError(nullptr);
  cudaPointerAttributes attributes{};
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, p), cudaSuccess);
  EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
  EXPECT_EQ(attributes.device, 0);
  std::vector<unsigned char> in(kBytes), out(kBytes);
  for (size_t i = 0; i < kBytes; ++i) in[i] = static_cast<unsigned char>(i * 7);
  ASSERT_EQ(cudaMemcpy(p, in.data(), kBytes, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(out.data(), p, kBytes, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(in, out);
  EXPECT_EQ(ncclMemFree(p), ncclSuccess) << ncclGetLastError(nullptr);
}

// The memory is cuMem's and its handle exports as a file descriptor: what CUDA IPC between the
// ranks of a host will pass. A sandbox may refuse the export; the test then says so.
TEST_F(MemAllocCuda, IsCuMemWithAPosixFileDescriptorHandle) {
  auto retain = driverFunction<decltype(&::cuMemRetainAllocationHandle)>("cuMemRetainAllocationHandle");
  auto exportHandle = driverFunction<decltype(&::cuMemExportToShareableHandle)>("cuMemExportToShareableHandle");
  auto release = driverFunction<decltype(&::cuMemRelease)>("cuMemRelease");
  if (!retain || !exportHandle || !release) GTEST_SKIP() << "this CUDA driver has no cuMem functions";
  void* p = nullptr;
  ASSERT_EQ(ncclMemAlloc(&p, 4096), ncclSuccess) << ncclGetLastError(nullptr);
  CUmemGenericAllocationHandle handle = 0;
  const CUresult retained = retain(&handle, p);
  if (retained != CUDA_SUCCESS) {
    // The fallback to cudaMalloc is right only where the driver refuses such memory.
    ncclMemFree(p);
    const CUresult refused = driverRefusesExportableMemory();
    if (refused != CUDA_SUCCESS)
      GTEST_SKIP() << "the driver refuses cuMem memory with a POSIX fd handle here (CUresult " << refused
                   << "): ncclMemAlloc falls back to cudaMalloc, and same-host peers would need staged copies";
    FAIL() << "ncclMemAlloc's memory is not cuMem's although the driver makes such memory (NCCL_DEBUG=INFO "
              "NCCL_DEBUG_SUBSYS=ALLOC says why it fell back to cudaMalloc)";
  }
  {
    int fd = -1;
    const CUresult exported = exportHandle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    release(handle);
    if (exported == CUDA_ERROR_NOT_PERMITTED || exported == CUDA_ERROR_NOT_SUPPORTED) {
      ncclMemFree(p);
      GTEST_SKIP() << "the driver refuses to export cuMem handles here (CUresult " << exported
                   << "): same-host peers would need staged copies";
    }
    EXPECT_EQ(exported, CUDA_SUCCESS);
    EXPECT_GE(fd, 0);
    if (fd >= 0) close(fd);
  }
  EXPECT_EQ(ncclMemFree(p), ncclSuccess) << ncclGetLastError(nullptr);
}

// Two ranks of this process share the GPU (weft allows it): an in-place all-reduce on
// ncclMemAlloc'd buffers in stream order, the inputs written and the results read on the streams.
TEST_F(MemAllocCuda, CollectivesRunOnItInStreamOrder) {
  constexpr int kRanks = 2;
  constexpr size_t kCount = (1 << 20) + 5;
  int devices[kRanks] = {0, 0};
  ncclComm_t comms[kRanks];
  ASSERT_EQ(ncclCommInitAll(comms, kRanks, devices), ncclSuccess) << ncclGetLastError(nullptr);
  float* buffers[kRanks];
  cudaStream_t streams[kRanks];
  std::vector<std::vector<float>> inputs(kRanks, std::vector<float>(kCount)), results = inputs;
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(ncclMemAlloc(reinterpret_cast<void**>(&buffers[r]), kCount * sizeof(float)), ncclSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking), cudaSuccess);
    for (size_t i = 0; i < kCount; ++i) inputs[r][i] = static_cast<float>((i % 101) * (r + 1));
    ASSERT_EQ(cudaMemcpyAsync(buffers[r], inputs[r].data(), kCount * sizeof(float), cudaMemcpyHostToDevice, streams[r]),
              cudaSuccess);
  }
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < kRanks; ++r)
    ASSERT_EQ(ncclAllReduce(buffers[r], buffers[r], kCount, ncclFloat32, ncclSum, comms[r], streams[r]), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(
        cudaMemcpyAsync(results[r].data(), buffers[r], kCount * sizeof(float), cudaMemcpyDeviceToHost, streams[r]),
        cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(streams[r]), cudaSuccess);
    size_t wrong = 0;
    for (size_t i = 0; i < kCount; ++i) wrong += results[r][i] != static_cast<float>((i % 101) * 3);
    EXPECT_EQ(wrong, 0u) << "rank " << r;
    ncclResult_t async = ncclSuccess;
    EXPECT_EQ(ncclCommGetAsyncError(comms[r], &async), ncclSuccess);
    EXPECT_EQ(async, ncclSuccess) << ncclGetLastError(comms[r]);
  }
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(ncclCommDestroy(comms[r]), ncclSuccess);
    EXPECT_EQ(ncclMemFree(buffers[r]), ncclSuccess);
    cudaStreamDestroy(streams[r]);
  }
}

TEST_F(MemAllocCuda, WeftMemAllocHostStaysOnTheHost) {
  void* p = nullptr;
  ASSERT_EQ(weftMemAllocHost(&p, 1 << 16), ncclSuccess);
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) == cudaSuccess) {
    EXPECT_EQ(attributes.type, cudaMemoryTypeUnregistered);
  }
  cudaGetLastError();
  static_cast<char*>(p)[0] = 1;  // host memory: the host writes it
  EXPECT_EQ(ncclMemFree(p), ncclSuccess);
}

#else

TEST(MemAllocCuda, GivesDeviceMemoryOfTheCurrentDevice) {
  GTEST_SKIP() << "weft was built without CUDA (WEFT_HAVE_CUDA off)";
}

#endif

}  // namespace
