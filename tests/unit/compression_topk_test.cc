// Top-k: exact returns exactly the k largest magnitudes (ties to the lower index); the
// approximate codec returns the exact top min(k, #above its sampled threshold).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <vector>

#include "compression/codec.h"
#include "compression/topk.h"
#include "tests/support/compression_test_util.h"

namespace weft::compression {
namespace {

using testing::Dist;

uint32_t keyOf(float x) { return std::bit_cast<uint32_t>(x) & 0x7fffffffu; }

// Reference: full sort by (key desc, index asc), first k, sorted by index.
std::vector<uint32_t> referenceTopK(const std::vector<float>& x, size_t k) {
  std::vector<uint32_t> order(x.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return keyOf(x[a]) > keyOf(x[b]); });
  order.resize(k);
  std::sort(order.begin(), order.end());
  return order;
}

struct Decoded {
  std::vector<uint32_t> indices;
  std::vector<float> values;
};

Decoded decodePairs(const std::vector<uint8_t>& enc) {
  uint32_t stored, cap;
  std::memcpy(&stored, enc.data(), 4);
  std::memcpy(&cap, enc.data() + 4, 4);
  Decoded d;
  d.indices.resize(stored);
  d.values.resize(stored);
  std::memcpy(d.indices.data(), enc.data() + 8, stored * 4);
  std::memcpy(d.values.data(), enc.data() + 8 + 4 * static_cast<size_t>(cap), stored * 4);
  return d;
}

TEST(CompressionTopK, ExactMatchesReference) {
  for (Dist d : testing::kAllDists) {
    for (size_t n : {1u, 7u, 1000u, 100003u}) {
      for (double ratio : {0.001, 0.01, 0.3, 1.0}) {
        CodecConfig c;
        c.kind = CodecKind::kTopK;
        c.topkRatio = ratio;
        std::unique_ptr<Codec> codec;
        ASSERT_EQ(Codec::create(c, n, &codec), ncclSuccess);
        auto x = testing::makeData(d, n, 21);
        if (n > 10) {
          x[3] = NAN;
          x[9] = -INFINITY;
        }
        std::vector<uint8_t> enc(codec->encodedBytes(n));
        ASSERT_EQ(codec->encode(x.data(), ncclFloat32, n, enc.data(), {}), ncclSuccess);
        auto got = decodePairs(enc);
        size_t k = topkCount(c, n);
        auto want = referenceTopK(x, k);
        ASSERT_EQ(got.indices, want) << testing::distName(d) << " n=" << n << " ratio=" << ratio;
        for (size_t j = 0; j < want.size(); ++j)
          ASSERT_EQ(std::bit_cast<uint32_t>(got.values[j]), std::bit_cast<uint32_t>(x[want[j]]));
        // decode: zeros except the pairs.
        std::vector<float> y(n, 1.0f);
        ASSERT_EQ(codec->decode(enc.data(), n, y.data(), ncclFloat32), ncclSuccess);
        size_t nonzero = 0;
        for (size_t i = 0; i < n; ++i) nonzero += std::bit_cast<uint32_t>(y[i]) != 0;
        EXPECT_LE(nonzero, k);
      }
    }
  }
}

TEST(CompressionTopK, ExactHandlesManyTiesBeyondCandidateCapacity) {
  // All-equal magnitudes with mixed signs: the refinement passes must resolve them.
  const size_t n = 1 << 20, k = 1000;
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = (i % 3 == 0) ? -2.0f : 2.0f;
  x[n - 1] = 2.5f;
  TopKSelector sel(n, k, 4096);
  std::vector<uint32_t> idx(k);
  std::vector<float> val(k);
  ASSERT_EQ(sel.exact(x.data(), n, k, idx.data(), val.data()), k);
  auto want = referenceTopK(x, k);
  EXPECT_EQ(idx, want);
}

TEST(CompressionTopK, ApproximateIsExactTopOfItsThreshold) {
  for (Dist d : {Dist::kNormal, Dist::kHeavyTail, Dist::kMixedScale}) {
    for (double oversample : {1.25, 0.8}) {
      const size_t n = 1 << 21;
      const size_t k = n / 100;
      auto x = testing::makeData(d, n, 22);
      TopKSelector sel(n, k, 65536);
      std::vector<uint32_t> idx(k);
      std::vector<float> val(k);
      size_t got = sel.approximate(x.data(), n, k, oversample, 5, idx.data(), val.data());
      const uint32_t t = sel.sampleThresholdKey();
      size_t above = 0;
      for (float v : x) above += keyOf(v) >= t;
      // Exactly the top min(k, above).
      ASSERT_EQ(got, std::min(k, above));
      std::vector<uint32_t> want = referenceTopK(x, got);
      idx.resize(got);
      ASSERT_EQ(idx, want) << testing::distName(d);
      // Stated tolerance: #above within oversample * k * (1 +- 6 / sqrt(oversample * p * m)).
      double expect = oversample * k;
      double rel = 6.0 / std::sqrt(oversample * 0.01 * 65536);
      EXPECT_NEAR(static_cast<double>(above), expect, expect * rel) << testing::distName(d);
      if (oversample > 1) {
        EXPECT_EQ(got, k);
      }
    }
  }
}

TEST(CompressionTopK, ApproximateCompactsWhenThresholdTooLow) {
  // A sample that sees only small values sets a low threshold; the buffer cut keeps it exact.
  const size_t n = 1 << 20, k = 100;
  std::vector<float> x(n, 0.5f);
  for (size_t i = 0; i < n; i += 7) x[i] = static_cast<float>(i % 1013) + 1.0f;
  TopKSelector sel(n, k, 1024);
  std::vector<uint32_t> idx(k);
  std::vector<float> val(k);
  size_t got = sel.approximate(x.data(), n, k, 16.0, 1, idx.data(), val.data());
  ASSERT_EQ(got, k);
  EXPECT_EQ(idx, referenceTopK(x, k));
}

TEST(CompressionTopK, HalfInputAndDecodeAdd) {
  CodecConfig c;
  c.kind = CodecKind::kTopK;
  c.topkRatio = 0.05;
  std::unique_ptr<Codec> codec;
  const size_t n = 4000;
  ASSERT_EQ(Codec::create(c, n, &codec), ncclSuccess);
  auto x = testing::makeData(Dist::kNormal, n, 23);
  std::vector<uint8_t> enc(codec->encodedBytes(n));
  ASSERT_EQ(codec->encode(x.data(), ncclFloat32, n, enc.data(), {}), ncclSuccess);
  std::vector<float> acc(n, 1.0f);
  ASSERT_EQ(codec->decodeAdd(enc.data(), n, acc.data(), 2.0f), ncclSuccess);
  auto pairs = decodePairs(enc);
  std::vector<float> want(n, 1.0f);
  for (size_t j = 0; j < pairs.indices.size(); ++j) want[pairs.indices[j]] = 1.0f + 2.0f * pairs.values[j];
  EXPECT_EQ(acc, want);
}

}  // namespace
}  // namespace weft::compression
