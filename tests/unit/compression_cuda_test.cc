// The CUDA codecs produce the same bytes as the CPU codecs for the same input and seed.
// Skips, saying why, when built without CUDA or run without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "compression/codec.h"
#include "tests/unit/compression_test_util.h"

#if defined(WEFT_HAVE_CUDA)
#include <cuda_runtime.h>

#include "compression/cuda/codecs.h"
#endif

namespace weft::compression {
namespace {

#if defined(WEFT_HAVE_CUDA)
bool haveGpu(std::string* why) {
  int devices = 0;
  cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess) {
    *why = std::string("no usable CUDA device: ") + cudaGetErrorString(err);
    return false;
  }
  if (devices == 0) {
    *why = "no CUDA device present";
    return false;
  }
  return true;
}

struct GpuCase {
  CodecKind kind;
  Rounding rounding;
  uint32_t block;
};

class CompressionCuda : public ::testing::TestWithParam<GpuCase> {};

TEST_P(CompressionCuda, SameBytesAsCpu) {
  std::string why;
  if (!haveGpu(&why)) GTEST_SKIP() << why;
  const GpuCase g = GetParam();
  CodecConfig c;
  c.kind = g.kind;
  c.rounding = g.rounding;
  c.blockSize = g.block;
  for (testing::Dist d : testing::kAllDists) {
    const size_t n = 100003;
    auto x = testing::makeData(d, n, 50);
    x[17] = NAN;
    x[5000] = INFINITY;
    x[9000] = -0.0f;
    // Indices cross a 2^32 boundary, where the random-number key changes.
    const EncodeContext ctx{0xfeedULL, (1ull << 32) - 40000};
    std::unique_ptr<Codec> codec;
    ASSERT_EQ(Codec::create(c, n, &codec), ncclSuccess);
    const size_t bytes = codec->encodedBytes(n);
    std::vector<uint8_t> cpu(bytes), gpu(bytes);
    ASSERT_EQ(codec->encode(x.data(), ncclFloat32, n, cpu.data(), ctx), ncclSuccess);
    std::vector<float> cpuOut(n), gpuOut(n), cpuAcc(n, 0.25f), gpuAcc(n);
    ASSERT_EQ(codec->decode(cpu.data(), n, cpuOut.data(), ncclFloat32), ncclSuccess);
    ASSERT_EQ(codec->decodeAdd(cpu.data(), n, cpuAcc.data(), -1.0f), ncclSuccess);

    float *dx = nullptr, *dout = nullptr, *dacc = nullptr;
    void* denc = nullptr;
    ASSERT_EQ(cudaMalloc(&dx, n * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&dout, n * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&dacc, n * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&denc, bytes), cudaSuccess);
    std::vector<float> quarter(n, 0.25f);
    cudaMemcpy(dx, x.data(), n * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(dacc, quarter.data(), n * 4, cudaMemcpyHostToDevice);
    ASSERT_EQ(cuda::encode(c, dx, n, denc, ctx, nullptr), ncclSuccess);
    ASSERT_EQ(cuda::decode(c, denc, n, dout, false, 1.0f, nullptr), ncclSuccess);
    ASSERT_EQ(cuda::decode(c, denc, n, dacc, true, -1.0f, nullptr), ncclSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    cudaMemcpy(gpu.data(), denc, bytes, cudaMemcpyDeviceToHost);
    cudaMemcpy(gpuOut.data(), dout, n * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(gpuAcc.data(), dacc, n * 4, cudaMemcpyDeviceToHost);
    cudaFree(dx);
    cudaFree(dout);
    cudaFree(dacc);
    cudaFree(denc);

    size_t firstDiff = bytes;
    for (size_t i = 0; i < bytes && firstDiff == bytes; ++i)
      if (cpu[i] != gpu[i]) firstDiff = i;
    EXPECT_EQ(firstDiff, bytes) << testing::distName(d) << ": encoded bytes differ first at byte " << firstDiff;
    EXPECT_EQ(0, std::memcmp(cpuOut.data(), gpuOut.data(), n * 4)) << testing::distName(d) << ": decode";
    EXPECT_EQ(0, std::memcmp(cpuAcc.data(), gpuAcc.data(), n * 4)) << testing::distName(d) << ": decodeAdd";
  }
}

INSTANTIATE_TEST_SUITE_P(All, CompressionCuda,
                         ::testing::Values(GpuCase{CodecKind::kFp16, Rounding::kNearest, 256},
                                           GpuCase{CodecKind::kBf16, Rounding::kNearest, 256},
                                           GpuCase{CodecKind::kInt8, Rounding::kNearest, 256},
                                           GpuCase{CodecKind::kInt8, Rounding::kStochastic, 256},
                                           GpuCase{CodecKind::kInt4, Rounding::kNearest, 264},
                                           GpuCase{CodecKind::kInt4, Rounding::kStochastic, 64},
                                           GpuCase{CodecKind::kSign, Rounding::kNearest, 1000}),
                         [](const auto& info) {
                           return std::string(codecName(info.param.kind)) +
                                  (info.param.rounding == Rounding::kNearest ? "_rtn_" : "_sr_") +
                                  std::to_string(info.param.block);
                         });
#else
TEST(CompressionCuda, SameBytesAsCpu) { GTEST_SKIP() << "weft was built without CUDA (WEFT_HAVE_CUDA off)"; }
#endif

}  // namespace
}  // namespace weft::compression
