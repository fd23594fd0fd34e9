// The CUDA codecs produce the same bytes as the CPU codecs for the same input and seed.
// Skips, saying why, when built without CUDA or run without a GPU.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <iterator>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "compression/codec.h"
#include "tests/support/compression_test_util.h"

#if defined(WEFT_HAVE_CUDA)
#include <cuda_runtime.h>

#include "tests/support/cuda_gpu.h"

#include "compression/cuda/codecs.h"
#include "compression/cuda/topk.h"
#endif

namespace weft::compression {
namespace {

#if defined(WEFT_HAVE_CUDA)
bool haveGpu(std::string* why) {
  *why = weft::testing::whyNoCudaGpu();
  return why->empty();
}

// One chunk through encode, decode and decodeAdd (onto 0.25 with alpha -1), on the CPU codec
// or on the device. The encoded buffer starts as 0xa5 bytes on both sides, so that top-k pairs
// past the stored count (left as they were) compare equal.
struct Results {
  std::vector<uint8_t> encoded;
  std::vector<float> decoded, accumulated;
};

void runCpu(Codec& codec, const std::vector<float>& x, const EncodeContext& ctx, Results* r) {
  const size_t n = x.size();
  r->encoded.assign(codec.encodedBytes(n), 0xa5);
  r->decoded.assign(n, 0.0f);
  r->accumulated.assign(n, 0.25f);
  ASSERT_EQ(codec.encode(x.data(), ncclFloat32, n, r->encoded.data(), ctx), ncclSuccess);
  ASSERT_EQ(codec.decode(r->encoded.data(), n, r->decoded.data(), ncclFloat32), ncclSuccess);
  ASSERT_EQ(codec.decodeAdd(r->encoded.data(), n, r->accumulated.data(), -1.0f), ncclSuccess);
}

void runGpu(const CodecConfig& c, const std::vector<float>& x, const EncodeContext& ctx, Results* r) {
  const size_t n = x.size(), bytes = encodedBytes(c, n);
  r->encoded.assign(bytes, 0xa5);
  r->decoded.assign(n, 0.0f);
  r->accumulated.assign(n, 0.25f);
  float *dx = nullptr, *dout = nullptr, *dacc = nullptr;
  void* denc = nullptr;
  ASSERT_EQ(cudaMalloc(&dx, n * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dout, n * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dacc, n * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&denc, bytes), cudaSuccess);
  cudaMemcpy(dx, x.data(), n * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(dacc, r->accumulated.data(), n * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(denc, r->encoded.data(), bytes, cudaMemcpyHostToDevice);
  EXPECT_EQ(cuda::encode(c, dx, n, denc, ctx, nullptr), ncclSuccess);
  EXPECT_EQ(cuda::decode(c, denc, n, dout, false, 1.0f, nullptr), ncclSuccess);
  EXPECT_EQ(cuda::decode(c, denc, n, dacc, true, -1.0f, nullptr), ncclSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  cudaMemcpy(r->encoded.data(), denc, bytes, cudaMemcpyDeviceToHost);
  cudaMemcpy(r->decoded.data(), dout, n * 4, cudaMemcpyDeviceToHost);
  cudaMemcpy(r->accumulated.data(), dacc, n * 4, cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dout);
  cudaFree(dacc);
  cudaFree(denc);
}

size_t firstDifference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return i;
  return a.size();
}

struct GpuCase {
  CodecKind kind;
  Rounding rounding;
  uint32_t block;
};

// Index of the first element whose bits differ, unless both are NaN: float arithmetic on the GPU
// returns the canonical NaN, x86 the NaN operand, so decodeAdd of a NaN may differ in payload.
size_t firstFloatDifference(const std::vector<float>& a, const std::vector<float>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(b[i]) && !(std::isnan(a[i]) && std::isnan(b[i])))
      return i;
  return a.size();
}

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
    Results cpu, gpu;
    ASSERT_NO_FATAL_FAILURE(runCpu(*codec, x, ctx, &cpu));
    ASSERT_NO_FATAL_FAILURE(runGpu(c, x, ctx, &gpu));
    const size_t bytes = cpu.encoded.size();
    size_t firstDiff = firstDifference(cpu.encoded, gpu.encoded);
    EXPECT_EQ(firstDiff, bytes) << testing::distName(d) << ": encoded bytes differ first at byte " << firstDiff;
    // Decoding multiplies by the block's scale, so a NaN in a block decodes to NaN payloads that
    // differ between the GPU and x86 (see firstFloatDifference); every other element must match.
    EXPECT_EQ(firstFloatDifference(cpu.decoded, gpu.decoded), n) << testing::distName(d) << ": decode";
    EXPECT_EQ(firstFloatDifference(cpu.accumulated, gpu.accumulated), n) << testing::distName(d) << ": decodeAdd";
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

// ---- top-k: exact and approximate, the CPU codec's bytes ----

// The distributions of makeData plus one of 8 magnitudes (ties at every cut), each with NaNs
// (two payloads, one of them the largest key 0x7fffffff, twice), infinities and -0.
std::vector<float> topkData(int dist, size_t n, uint32_t seed) {
  std::vector<float> x;
  if (dist < static_cast<int>(std::size(testing::kAllDists))) {
    x = testing::makeData(testing::kAllDists[dist], n, seed);
  } else {
    x.resize(n);
    for (size_t i = 0; i < n; ++i) {
      uint32_t h = static_cast<uint32_t>(i) * 2654435761u;
      x[i] = static_cast<float>(h >> 29) * ((h & 0x10000u) ? -0.25f : 0.25f);
    }
  }
  const std::pair<size_t, uint32_t> specials[] = {{n / 2, 0x7fc00000u}, {n / 3, 0xffffffffu}, {n - 1, 0x7fffffffu},
                                                  {n / 5, 0x7f800000u}, {n / 7, 0xff800000u}, {n / 11, 0x80000000u}};
  for (auto [i, b] : specials) x[i] = std::bit_cast<float>(b);
  return x;
}
const char* topkDataName(int dist) {
  return dist < static_cast<int>(std::size(testing::kAllDists)) ? testing::distName(testing::kAllDists[dist])
                                                                : "eight_magnitudes";
}
constexpr int kTopKDists = static_cast<int>(std::size(testing::kAllDists)) + 1;

struct TopKCase {
  const char* name;
  CodecKind kind;
  double ratio;
  size_t n;
  double oversample;
  uint32_t sampleSize;
};

void PrintTo(const TopKCase& t, std::ostream* os) { *os << t.name; }

class CompressionCudaTopK : public ::testing::TestWithParam<TopKCase> {};

TEST_P(CompressionCudaTopK, SameBytesAsCpu) {
  std::string why;
  if (!haveGpu(&why)) GTEST_SKIP() << why;
  const TopKCase t = GetParam();
  CodecConfig c;
  c.kind = t.kind;
  c.topkRatio = t.ratio;
  c.topkOversample = t.oversample;
  c.topkSampleSize = t.sampleSize;
  std::unique_ptr<Codec> codec;
  ASSERT_EQ(Codec::create(c, t.n, &codec), ncclSuccess);
  for (int dist = 0; dist < kTopKDists; ++dist) {
    SCOPED_TRACE(topkDataName(dist));
    const auto x = topkData(dist, t.n, 60 + dist);
    const EncodeContext ctx{0xc0ffeeULL + dist, 4096ull * dist};
    Results cpu, gpu;
    ASSERT_NO_FATAL_FAILURE(runCpu(*codec, x, ctx, &cpu));
    ASSERT_NO_FATAL_FAILURE(runGpu(c, x, ctx, &gpu));
    uint32_t stored[2] = {}, gpuStored[2] = {};
    std::memcpy(stored, cpu.encoded.data(), 8);
    std::memcpy(gpuStored, gpu.encoded.data(), 8);
    EXPECT_EQ(gpuStored[0], stored[0]) << "stored pairs (k = " << stored[1] << ")";
    const size_t diff = firstDifference(cpu.encoded, gpu.encoded);
    EXPECT_EQ(diff, cpu.encoded.size()) << "encoded bytes differ first at byte " << diff;
    EXPECT_EQ(0, std::memcmp(cpu.decoded.data(), gpu.decoded.data(), t.n * 4)) << "decode";
    const size_t accDiff = firstFloatDifference(cpu.accumulated, gpu.accumulated);
    EXPECT_EQ(accDiff, t.n) << "decodeAdd differs first at element " << accDiff;
  }
}

// Approximate cases sample (n / 16 >= 4 * sampleSize / 16) unless named otherwise.
constexpr size_t kLarge = (1u << 20) + 13;
INSTANTIATE_TEST_SUITE_P(
    All, CompressionCudaTopK,
    ::testing::Values(TopKCase{"exact_1pct", CodecKind::kTopK, 0.01, 100003, 1.25, 65536},
                      TopKCase{"exact_k1", CodecKind::kTopK, 1e-9, 100003, 1.25, 65536},
                      TopKCase{"exact_k_is_n", CodecKind::kTopK, 1.0, 4099, 1.25, 65536},
                      TopKCase{"exact_30pct", CodecKind::kTopK, 0.3, 300007, 1.25, 65536},
                      TopKCase{"exact_n1", CodecKind::kTopK, 0.5, 1, 1.25, 65536},
                      TopKCase{"exact_n13", CodecKind::kTopK, 0.5, 13, 1.25, 65536},
                      TopKCase{"approx_1pct", CodecKind::kTopKApprox, 0.01, kLarge, 1.25, 65536},
                      TopKCase{"approx_fewer_than_k", CodecKind::kTopKApprox, 0.01, kLarge, 0.8, 65536},
                      TopKCase{"approx_oversample16", CodecKind::kTopKApprox, 0.001, 200003, 16.0, 1024},
                      TopKCase{"approx_one_line_sample", CodecKind::kTopKApprox, 0.05, 100003, 1.25, 16},
                      TopKCase{"approx_k1", CodecKind::kTopKApprox, 1e-9, kLarge, 1.25, 65536},
                      TopKCase{"approx_small_chunk_is_exact", CodecKind::kTopKApprox, 0.01, 100003, 1.25, 65536},
                      TopKCase{"approx_k_is_n", CodecKind::kTopKApprox, 1.0, 70001, 1.25, 1024}),
    [](const auto& info) { return std::string(info.param.name); });

// cuda::topkEncode with the caller's scratch (uncleared, reused across calls and sizes) on a
// stream of its own; an empty chunk writes a zero header; too little scratch is refused.
TEST(CompressionCudaTopK, CallerWorkspace) {
  std::string why;
  if (!haveGpu(&why)) GTEST_SKIP() << why;
  const size_t maxCount = kLarge;
  const size_t wsBytes = cuda::topkWorkspaceBytes(maxCount);
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  void *ws = nullptr, *denc = nullptr;
  float* dx = nullptr;
  ASSERT_EQ(cudaMalloc(&ws, wsBytes), cudaSuccess);
  ASSERT_EQ(cudaMemset(ws, 0xff, wsBytes), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dx, maxCount * 4), cudaSuccess);
  CodecConfig c;
  c.kind = CodecKind::kTopK;
  c.topkRatio = 0.02;
  ASSERT_EQ(cudaMalloc(&denc, encodedBytes(c, maxCount)), cudaSuccess);
  const auto x = topkData(0, maxCount, 7);
  cudaMemcpy(dx, x.data(), maxCount * 4, cudaMemcpyHostToDevice);
  for (CodecKind kind : {CodecKind::kTopKApprox, CodecKind::kTopK}) {
    for (size_t n : {maxCount, size_t{5000}}) {
      c.kind = kind;
      std::unique_ptr<Codec> codec;
      ASSERT_EQ(Codec::create(c, n, &codec), ncclSuccess);
      const std::vector<float> chunk(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(n));
      const EncodeContext ctx{99, 1};
      Results cpu;
      ASSERT_NO_FATAL_FAILURE(runCpu(*codec, chunk, ctx, &cpu));
      std::vector<uint8_t> gpu(cpu.encoded.size(), 0xa5);
      cudaMemcpy(denc, gpu.data(), gpu.size(), cudaMemcpyHostToDevice);
      ASSERT_EQ(cuda::topkEncode(c, dx, n, denc, ctx, ws, wsBytes, stream), ncclSuccess);
      ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
      cudaMemcpy(gpu.data(), denc, gpu.size(), cudaMemcpyDeviceToHost);
      EXPECT_EQ(firstDifference(cpu.encoded, gpu), gpu.size()) << codecName(kind) << " n=" << n;
    }
  }
  uint32_t header[2] = {7, 7};
  cudaMemcpy(denc, header, 8, cudaMemcpyHostToDevice);
  ASSERT_EQ(cuda::topkEncode(c, dx, 0, denc, {}, nullptr, 0, stream), ncclSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  cudaMemcpy(header, denc, 8, cudaMemcpyDeviceToHost);
  EXPECT_EQ(header[0], 0u);
  EXPECT_EQ(header[1], 0u);
  EXPECT_EQ(cuda::topkEncode(c, dx, maxCount, denc, {}, ws, cuda::topkWorkspaceBytes(maxCount) - 4, stream),
            ncclInvalidArgument);
  cudaFree(ws);
  cudaFree(dx);
  cudaFree(denc);
  cudaStreamDestroy(stream);
}
#else
TEST(CompressionCuda, SameBytesAsCpu) { GTEST_SKIP() << "weft was built without CUDA (WEFT_HAVE_CUDA off)"; }
TEST(CompressionCudaTopK, SameBytesAsCpu) { GTEST_SKIP() << "weft was built without CUDA (WEFT_HAVE_CUDA off)"; }
TEST(CompressionCudaTopK, CallerWorkspace) { GTEST_SKIP() << "weft was built without CUDA (WEFT_HAVE_CUDA off)"; }
#endif

}  // namespace
}  // namespace weft::compression
