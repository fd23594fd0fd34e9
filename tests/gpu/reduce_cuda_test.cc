// The CUDA reduction kernels (common/cuda/reduce.h) give the CPU kernels' results (NaN for NaN)
// for every type and operator, in place and out of place, aligned and not, and PreMulSum reads
// a device scalar when the kernel runs. Needs a GPU for the kernels (skipped, with the reason,
// without one); the argument checks and the failed launch without a device run everywhere.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "common/reduce.h"
#include "nccl.h"
#include "tests/support/same_element.h"

#if defined(WEFT_HAVE_CUDA)
#include <cuda_runtime.h>

#include "tests/support/cuda_gpu.h"

#include "common/cuda/reduce.h"
#endif

namespace weft {
namespace {

#if defined(WEFT_HAVE_CUDA)

using weft::testing::sameElement;

using weft::testing::whyNoCudaGpu;

// Every bit pattern (NaNs, infinities, subnormals, the narrow types' extremes included).
std::vector<unsigned char> randomBytes(size_t bytes, uint64_t seed) {
  std::vector<unsigned char> out(bytes);
  std::mt19937_64 rng(seed);
  for (unsigned char& b : out) b = static_cast<unsigned char>(rng());
  return out;
}

// Device memory holding `bytes` at `offset` bytes into an allocation (misaligned placements).
class DeviceBuffer {
 public:
  DeviceBuffer(size_t bytes, size_t offset) : offset_(offset) {
    EXPECT_EQ(cudaMalloc(&base_, bytes + offset + 16), cudaSuccess);
  }
  ~DeviceBuffer() { cudaFree(base_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return static_cast<char*>(base_) + offset_; }

 private:
  void* base_ = nullptr;
  size_t offset_;
};

std::vector<unsigned char> fromDevice(const void* device, size_t bytes) {
  std::vector<unsigned char> host(bytes);
  EXPECT_EQ(cudaMemcpy(host.data(), device, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  return host;
}

// Synchronized: a copy from pageable memory may return before its DMA is done, and the kernels
// run on streams that do not wait for the legacy stream.
void toDevice(void* device, const std::vector<unsigned char>& host) {
  ASSERT_EQ(cudaMemcpy(device, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

void expectSame(const std::vector<unsigned char>& want, const std::vector<unsigned char>& got, ncclDataType_t type,
                const std::string& what) {
  const size_t size = dataTypeSize(type);
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size() / size; ++i)
    ASSERT_TRUE(sameElement(&want[i * size], &got[i * size], type))
        << what << ": " << dataTypeName(type) << " element " << i;
}

const size_t kCounts[] = {1, 15, 4099, 1000003};
const ReduceOp kOps[] = {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min};

// `want` from a op b in every placement: out of place aligned (the 16-byte path); the destination,
// or the first source, one element off (the element-by-element path); in place on a and on b.
void expectPlacementsMatch(const std::vector<unsigned char>& want, const std::vector<unsigned char>& a,
                           const std::vector<unsigned char>& b, size_t count, ncclDataType_t t, ReduceOp op) {
  const size_t size = dataTypeSize(t), bytes = count * size;
  const std::string what = "count " + std::to_string(count) + " op " + std::to_string(static_cast<int>(op));
  struct Placement {
    const char* name;
    size_t dstOffset, aOffset;
  };
  for (const Placement& p :
       {Placement{"aligned", 0, 0}, Placement{"destination off", size, 0}, Placement{"source off", 0, size}}) {
    DeviceBuffer da(bytes, p.aOffset), db(bytes, 0), dd(bytes, p.dstOffset);
    toDevice(da.get(), a);
    toDevice(db.get(), b);
    ASSERT_EQ(cuda::reduceBuffers(dd.get(), da.get(), db.get(), count, t, op, nullptr), ncclSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    expectSame(want, fromDevice(dd.get(), bytes), t, what + ", " + p.name);
  }
  for (bool intoA : {true, false}) {
    DeviceBuffer da(bytes, 0), db(bytes, 0);
    toDevice(da.get(), a);
    toDevice(db.get(), b);
    void* dst = intoA ? da.get() : db.get();
    ASSERT_EQ(cuda::reduceBuffers(dst, da.get(), db.get(), count, t, op, nullptr), ncclSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    expectSame(want, fromDevice(dst, bytes), t, what + (intoA ? ", in place on a" : ", in place on b"));
  }
}

class ReduceCuda : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    const std::string why = whyNoCudaGpu();
    if (!why.empty()) GTEST_SKIP() << why;
  }
  ncclDataType_t type() const { return static_cast<ncclDataType_t>(GetParam()); }
};

TEST_P(ReduceCuda, EveryOperatorMatchesTheCpuKernels) {
  const ncclDataType_t t = type();
  const size_t size = dataTypeSize(t);
  for (size_t count : kCounts) {
    const size_t bytes = count * size;
    const std::vector<unsigned char> a = randomBytes(bytes, count), b = randomBytes(bytes, count + 1);
    for (ReduceOp op : kOps) {
      std::vector<unsigned char> want(bytes);
      reduceBuffers(want.data(), a.data(), b.data(), count, t, op);
      expectPlacementsMatch(want, a, b, count, t, op);
    }
  }
}

// Counts beyond one pass of the largest grid (kMaxBlocks x 256 threads, 16 bytes each on the
// vector path), so that the grid-stride loops go round more than once on both paths.
TEST_P(ReduceCuda, LargeBuffersLoopOverTheGrid) {
  const ncclDataType_t t = type();
  const size_t size = dataTypeSize(t), count = (size_t{8192} * 256 * 16 + 40) / size, bytes = count * size;
  const std::vector<unsigned char> a = randomBytes(bytes, 21), b = randomBytes(bytes, 22);
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max}) {
    std::vector<unsigned char> want(bytes);
    reduceBuffers(want.data(), a.data(), b.data(), count, t, op);
    expectPlacementsMatch(want, a, b, count, t, op);
  }
}

TEST_P(ReduceCuda, DivisionMatchesTheCpuKernels) {
  const ncclDataType_t t = type();
  const size_t size = dataTypeSize(t), count = 4099, bytes = count * size;
  const std::vector<unsigned char> a = randomBytes(bytes, 7);
  for (uint64_t divisor : {uint64_t{1}, uint64_t{3}, uint64_t{8}, uint64_t{1000}, (uint64_t{1} << 32) + 5,
                           uint64_t{1} << 63, ~uint64_t{0}}) {
    std::vector<unsigned char> want(bytes);
    divideBuffer(want.data(), a.data(), count, t, divisor);
    DeviceBuffer da(bytes, 0);
    toDevice(da.get(), a);
    ASSERT_EQ(cuda::divideBuffer(da.get(), da.get(), count, t, divisor, nullptr), ncclSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    expectSame(want, fromDevice(da.get(), bytes), t, "divisor " + std::to_string(divisor));
  }
}

// The factor is read when the kernel runs: a copy queued before it on the stream decides it.
TEST_P(ReduceCuda, ScalingReadsTheDeviceScalarInStreamOrder) {
  const ncclDataType_t t = type();
  const size_t size = dataTypeSize(t), count = 4099, bytes = count * size;
  const std::vector<unsigned char> a = randomBytes(bytes, 9), scalars = randomBytes(2 * size, 10);
  std::vector<unsigned char> want(bytes), wantNow(bytes);
  scaleBuffer(want.data(), a.data(), count, t, &scalars[size]);
  scaleBuffer(wantNow.data(), a.data(), count, t, &scalars[0]);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  DeviceBuffer da(bytes, 0), dout(bytes, 0), dscalar(size, 0);
  toDevice(da.get(), a);
  toDevice(dscalar.get(), std::vector<unsigned char>(scalars.begin(), scalars.begin() + size));
  ASSERT_EQ(cudaMemcpyAsync(dscalar.get(), &scalars[size], size, cudaMemcpyHostToDevice, stream), cudaSuccess);
  ASSERT_EQ(cuda::scaleBuffer(dout.get(), da.get(), count, t, dscalar.get(), cuda::ScalarAt::Device, stream),
            ncclSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  expectSame(want, fromDevice(dout.get(), bytes), t, "device scalar");
  // A host scalar is taken at the call.
  ASSERT_EQ(cuda::scaleBuffer(da.get(), da.get(), count, t, &scalars[0], cuda::ScalarAt::HostNow, stream), ncclSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  expectSame(wantNow, fromDevice(da.get(), bytes), t, "host scalar, in place");
  cudaStreamDestroy(stream);
}

INSTANTIATE_TEST_SUITE_P(EveryType, ReduceCuda, ::testing::Range(0, static_cast<int>(ncclNumTypes)),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::string(dataTypeName(static_cast<ncclDataType_t>(info.param)));
                         });

// No GPU needed: bad arguments are refused before anything reaches CUDA, and an empty call
// launches nothing.
TEST(ReduceCudaArguments, AreCheckedBeforeCuda) {
  char byte = 0;
  EXPECT_EQ(
      cuda::reduceBuffers(&byte, &byte, &byte, 1, static_cast<ncclDataType_t>(ncclNumTypes), ReduceOp::Sum, nullptr),
      ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("datatype"), std::string::npos) << ncclGetLastError(nullptr);
  EXPECT_EQ(cuda::reduceBuffers(&byte, &byte, &byte, 1, ncclFloat32, static_cast<ReduceOp>(7), nullptr),
            ncclInvalidArgument);
  EXPECT_EQ(cuda::scaleBuffer(&byte, &byte, 1, ncclInt8, nullptr, cuda::ScalarAt::HostNow, nullptr),
            ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("scalar"), std::string::npos) << ncclGetLastError(nullptr);
  EXPECT_EQ(cuda::divideBuffer(&byte, &byte, 1, static_cast<ncclDataType_t>(-1), 2, nullptr), ncclInvalidArgument);
  EXPECT_EQ(cuda::reduceBuffers(nullptr, nullptr, nullptr, 0, ncclFloat32, ReduceOp::Sum, nullptr), ncclSuccess);
}

// Without a GPU a launch fails with ncclUnhandledCudaError and says why, never a crash.
TEST(ReduceCudaArguments, ALaunchWithoutADeviceFailsWithCudasReason) {
  if (whyNoCudaGpu().empty()) GTEST_SKIP() << "a CUDA device is present: this test is for machines without one";
  float value = 1.0f;
  EXPECT_EQ(cuda::reduceBuffers(&value, &value, &value, 1, ncclFloat32, ReduceOp::Sum, nullptr),
            ncclUnhandledCudaError);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("launching the CUDA kernel failed"), std::string::npos)
      << ncclGetLastError(nullptr);
}

#else

TEST(ReduceCuda, EveryOperatorMatchesTheCpuKernels) {
  GTEST_SKIP() << "weft was built without CUDA (WEFT_HAVE_CUDA off)";
}

#endif

}  // namespace
}  // namespace weft
