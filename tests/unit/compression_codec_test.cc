// Codec round trips, special values, variant equality and stochastic rounding statistics.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "common/numeric.h"
#include "compression/codec.h"
#include "compression/cpu/simd.h"
#include "compression/rng.h"
#include "tests/support/compression_test_util.h"

namespace weft::compression {
namespace {

using testing::Dist;
using testing::kAllDists;
using testing::makeData;

std::unique_ptr<Codec> makeCodec(CodecKind kind, uint32_t block = 256, Rounding r = Rounding::kNearest,
                                 size_t maxCount = 1 << 20) {
  CodecConfig c;
  c.kind = kind;
  c.blockSize = block;
  c.rounding = r;
  std::unique_ptr<Codec> codec;
  EXPECT_EQ(Codec::create(c, maxCount, &codec), ncclSuccess);
  return codec;
}

std::vector<uint8_t> encode(Codec& codec, const std::vector<float>& x, EncodeContext ctx = {}) {
  std::vector<uint8_t> enc(codec.encodedBytes(x.size()));
  EXPECT_EQ(codec.encode(x.data(), ncclFloat32, x.size(), enc.data(), ctx), ncclSuccess);
  return enc;
}

std::vector<float> decode(Codec& codec, const std::vector<uint8_t>& enc, size_t n) {
  std::vector<float> out(n, -12345.0f);
  EXPECT_EQ(codec.decode(enc.data(), n, out.data(), ncclFloat32), ncclSuccess);
  return out;
}

// ---- casts ----

TEST(CompressionCast, RoundTripMatchesScalarConversion) {
  for (CodecKind kind : {CodecKind::kFp16, CodecKind::kBf16}) {
    auto codec = makeCodec(kind);
    for (Dist d : kAllDists) {
      auto x = makeData(d, 10007, 1);
      x[5] = INFINITY;
      x[6] = -INFINITY;
      x[7] = NAN;
      x[8] = 1e6f;
      auto y = decode(*codec, encode(*codec, x), x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        float ref = kind == CodecKind::kFp16 ? halfToFloat(floatToHalf(x[i])) : bfloat16ToFloat(floatToBfloat16(x[i]));
        if (std::isnan(ref)) {
          ASSERT_TRUE(std::isnan(y[i])) << i;
          continue;
        }
        ASSERT_EQ(std::bit_cast<uint32_t>(y[i]), std::bit_cast<uint32_t>(ref)) << codecName(kind) << " " << i;
        // Stated bound: relative 2^-11 (fp16 normal range) / 2^-8 (bf16).
        double ax = std::fabs(static_cast<double>(x[i]));
        if (kind == CodecKind::kBf16 && std::isfinite(x[i]) && ax > 1e-37) {
          ASSERT_LE(std::fabs(y[i] - static_cast<double>(x[i])), ax * 0x1p-8);
        }
        if (kind == CodecKind::kFp16 && ax >= 0x1p-14 && ax < 65504) {
          ASSERT_LE(std::fabs(y[i] - static_cast<double>(x[i])), ax * 0x1p-11);
        }
      }
      if (kind == CodecKind::kFp16) {
        EXPECT_TRUE(std::isinf(y[8]));
      }
      EXPECT_TRUE(std::isinf(y[5]) && y[5] > 0);
      EXPECT_TRUE(std::isinf(y[6]) && y[6] < 0);
    }
  }
}

TEST(CompressionCast, HalfInputsAndOutputs) {
  auto codec = makeCodec(CodecKind::kFp16);
  auto x = makeData(Dist::kNormal, 5000, 2);
  std::vector<uint16_t> bf(x.size());
  for (size_t i = 0; i < x.size(); ++i) bf[i] = floatToBfloat16(x[i]);
  std::vector<float> xf(x.size());
  for (size_t i = 0; i < x.size(); ++i) xf[i] = bfloat16ToFloat(bf[i]);
  std::vector<uint8_t> a(codec->encodedBytes(x.size())), b(a.size());
  ASSERT_EQ(codec->encode(bf.data(), ncclBfloat16, x.size(), a.data(), {}), ncclSuccess);
  ASSERT_EQ(codec->encode(xf.data(), ncclFloat32, x.size(), b.data(), {}), ncclSuccess);
  EXPECT_EQ(a, b);
  std::vector<uint16_t> outBf(x.size());
  ASSERT_EQ(codec->decode(a.data(), x.size(), outBf.data(), ncclBfloat16), ncclSuccess);
  auto yf = decode(*codec, a, x.size());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(outBf[i], floatToBfloat16(yf[i]));
}

// ---- block quantization ----

struct QuantCase {
  CodecKind kind;
  Rounding rounding;
  uint32_t block;
};

class CompressionQuantize : public ::testing::TestWithParam<QuantCase> {};

TEST_P(CompressionQuantize, RoundTripWithinBound) {
  const QuantCase c = GetParam();
  auto codec = makeCodec(c.kind, c.block, c.rounding);
  const double qmax = c.kind == CodecKind::kInt8 ? 127.0 : 7.0;
  for (Dist d : kAllDists) {
    const size_t n = 10007;
    auto x = makeData(d, n, 3);
    auto enc = encode(*codec, x, EncodeContext{42, 1000});
    auto y = decode(*codec, enc, n);
    for (size_t b = 0; b < n; b += c.block) {
      size_t e = std::min<size_t>(n, b + c.block);
      double amax = 0;
      for (size_t i = b; i < e; ++i) amax = std::max(amax, std::fabs(static_cast<double>(x[i])));
      double scale = amax / qmax;
      for (size_t i = b; i < e; ++i) {
        double err = std::fabs(static_cast<double>(y[i]) - x[i]);
        if (amax < 0x1p-100) {
          ASSERT_EQ(y[i], 0.0f) << testing::distName(d) << " " << i;
        } else if (c.rounding == Rounding::kNearest) {
          ASSERT_LE(err, scale * (0.5 + 1e-5)) << testing::distName(d) << " " << i;
        } else {
          ASSERT_LT(err, scale * (1.0 + 1e-5)) << testing::distName(d) << " " << i;
        }
      }
    }
    // decodeAdd == acc + decode.
    std::vector<float> acc(n, 1.5f);
    ASSERT_EQ(codec->decodeAdd(enc.data(), n, acc.data()), ncclSuccess);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(acc[i], 1.5f + y[i]);
  }
}

TEST_P(CompressionQuantize, NonFiniteBlocksDecodeToNaN) {
  const QuantCase c = GetParam();
  auto codec = makeCodec(c.kind, c.block, c.rounding);
  auto x = makeData(Dist::kNormal, 4 * c.block, 4);
  x[c.block + 3] = INFINITY;
  x[2 * c.block + 1] = NAN;
  auto y = decode(*codec, encode(*codec, x), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    bool poisoned = i >= c.block && i < 3 * c.block;
    ASSERT_EQ(std::isnan(y[i]), poisoned) << i;
  }
}

TEST_P(CompressionQuantize, VariantsProduceIdenticalBytes) {
  const QuantCase c = GetParam();
  auto codec = makeCodec(c.kind, c.block, c.rounding);
  auto x = makeData(Dist::kHeavyTail, 50001, 5);
  Isa saved = activeIsa();
  std::vector<std::vector<uint8_t>> encs;
  std::vector<std::vector<float>> decs;
  for (Isa isa : {Isa::kPortable, Isa::kAvx2, Isa::kAvx512}) {
    if (static_cast<int>(isa) > static_cast<int>(detectedIsa())) continue;
    forceIsa(isa);
    encs.push_back(encode(*codec, x, EncodeContext{7, 123456789}));
    decs.push_back(decode(*codec, encs.back(), x.size()));
  }
  forceIsa(saved);
  for (size_t v = 1; v < encs.size(); ++v) {
    EXPECT_EQ(encs[v], encs[0]) << "variant " << v;
    EXPECT_EQ(0, std::memcmp(decs[v].data(), decs[0].data(), x.size() * 4)) << "variant " << v;
  }
}

TEST_P(CompressionQuantize, ChunkingDoesNotChangeResults) {
  // Chunks cut at block multiples, with firstIndex, give the bytes of the whole.
  const QuantCase c = GetParam();
  auto codec = makeCodec(c.kind, c.block, c.rounding);
  const size_t n = 20 * c.block + 5, cut = 7 * c.block;
  auto x = makeData(Dist::kNormal, n, 6);
  auto whole = decode(*codec, encode(*codec, x, EncodeContext{9, 0}), n);
  std::vector<float> x1(x.begin(), x.begin() + cut), x2(x.begin() + cut, x.end());
  auto y1 = decode(*codec, encode(*codec, x1, EncodeContext{9, 0}), x1.size());
  auto y2 = decode(*codec, encode(*codec, x2, EncodeContext{9, cut}), x2.size());
  y1.insert(y1.end(), y2.begin(), y2.end());
  EXPECT_EQ(0, std::memcmp(whole.data(), y1.data(), n * 4));
}

TEST_P(CompressionQuantize, ReduceEncodedWithinRequantizationBound) {
  const QuantCase c = GetParam();
  auto codec = makeCodec(c.kind, c.block, c.rounding);
  const double qmax = c.kind == CodecKind::kInt8 ? 127.0 : 7.0;
  const size_t n = 8 * c.block + 3;
  auto a = makeData(Dist::kNormal, n, 7), b = makeData(Dist::kNormal, n, 8);
  auto ea = encode(*codec, a), eb = encode(*codec, b);
  std::vector<uint8_t> sum(codec->encodedBytes(n));
  ASSERT_EQ(codec->reduceEncoded(ea.data(), eb.data(), n, sum.data(), EncodeContext{3, 0}), ncclSuccess);
  auto da = decode(*codec, ea, n), db = decode(*codec, eb, n), ds = decode(*codec, sum, n);
  for (size_t blk = 0; blk < n; blk += c.block) {
    size_t e = std::min(n, blk + c.block);
    double amax = 0;
    for (size_t i = blk; i < e; ++i) amax = std::max(amax, std::fabs(static_cast<double>(da[i] + db[i])));
    double bound = amax / qmax * (c.rounding == Rounding::kNearest ? 0.5 + 1e-5 : 1.0 + 1e-5);
    for (size_t i = blk; i < e; ++i) ASSERT_LE(std::fabs(static_cast<double>(ds[i]) - (da[i] + db[i])), bound);
  }
}

INSTANTIATE_TEST_SUITE_P(All, CompressionQuantize,
                         ::testing::Values(QuantCase{CodecKind::kInt8, Rounding::kNearest, 256},
                                           QuantCase{CodecKind::kInt8, Rounding::kStochastic, 256},
                                           QuantCase{CodecKind::kInt8, Rounding::kNearest, 40},
                                           QuantCase{CodecKind::kInt4, Rounding::kNearest, 256},
                                           QuantCase{CodecKind::kInt4, Rounding::kStochastic, 64},
                                           QuantCase{CodecKind::kInt4, Rounding::kNearest, 8192}),
                         [](const auto& info) {
                           return std::string(codecName(info.param.kind)) +
                                  (info.param.rounding == Rounding::kNearest ? "_rtn_" : "_sr_") +
                                  std::to_string(info.param.block);
                         });

TEST(CompressionQuantize, StochasticRoundingIsUnbiased) {
  for (CodecKind kind : {CodecKind::kInt8, CodecKind::kInt4}) {
    auto codec = makeCodec(kind, 64, Rounding::kStochastic);
    const double qmax = kind == CodecKind::kInt8 ? 127.0 : 7.0;
    const size_t n = 1024;
    auto x = makeData(Dist::kNormal, n, 11);
    const int trials = 2000;
    std::vector<double> meanErr(n, 0.0);
    double total = 0;
    for (int t = 0; t < trials; ++t) {
      auto y = decode(*codec, encode(*codec, x, EncodeContext{static_cast<uint64_t>(t) * 7919 + 1, 0}), n);
      for (size_t i = 0; i < n; ++i) {
        meanErr[i] += (static_cast<double>(y[i]) - x[i]) / trials;
        total += static_cast<double>(y[i]) - x[i];
      }
    }
    double maxScale = 0;
    for (size_t b = 0; b < n; b += 64) {
      double amax = 0;
      for (size_t i = b; i < b + 64; ++i) amax = std::max(amax, std::fabs(static_cast<double>(x[i])));
      double scale = amax / qmax;
      maxScale = std::max(maxScale, scale);
      // Per element: the error is within [-scale, scale] with std <= scale / 2.
      for (size_t i = b; i < b + 64; ++i) ASSERT_LE(std::fabs(meanErr[i]), 5.0 * scale / 2 / std::sqrt(trials)) << i;
    }
    EXPECT_LE(std::fabs(total / (static_cast<double>(trials) * n)), 5.0 * maxScale / 2 / std::sqrt(trials * n));
  }
}

TEST(CompressionRng, CounterBasedAndUniform) {
  // Same (seed, index) -> same number; the mean of many is 1/2.
  EXPECT_EQ(rngUniformAt(5, 1ull << 33), rngUniformAt(5, 1ull << 33));
  EXPECT_NE(rngUniformAt(5, 10), rngUniformAt(6, 10));
  double sum = 0;
  const int n = 1 << 20;
  for (int i = 0; i < n; ++i) {
    float u = rngUniformAt(1234, i);
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
  }
  EXPECT_NEAR(sum / n, 0.5, 5 * 0.2887 / std::sqrt(n));
}

// ---- sign ----

TEST(CompressionSign, ScaleIsMeanMagnitudeAndSignsMatch) {
  for (uint32_t block : {8u, 256u, 1000u}) {
    auto codec = makeCodec(CodecKind::kSign, block);
    for (Dist d : kAllDists) {
      const size_t n = 10007;
      auto x = makeData(d, n, 12);
      auto y = decode(*codec, encode(*codec, x), n);
      for (size_t b = 0; b < n; b += block) {
        size_t e = std::min<size_t>(n, b + block);
        double l1 = 0;
        for (size_t i = b; i < e; ++i) l1 += std::fabs(static_cast<double>(x[i]));
        double mean = l1 / (e - b);
        for (size_t i = b; i < e; ++i) {
          ASSERT_EQ(std::signbit(y[i]), std::signbit(x[i])) << i;
          ASSERT_NEAR(std::fabs(y[i]), mean, mean * 1e-4 + 1e-45) << testing::distName(d) << " " << i;
        }
      }
    }
  }
}

TEST(CompressionSign, NonFiniteAndVariants) {
  auto codec = makeCodec(CodecKind::kSign, 64);
  auto x = makeData(Dist::kNormal, 64 * 10 + 17, 13);
  x[64 * 3 + 2] = -INFINITY;
  auto enc = encode(*codec, x);
  auto y = decode(*codec, enc, x.size());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(std::isnan(y[i]), i / 64 == 3) << i;
  Isa saved = activeIsa();
  for (Isa isa : {Isa::kPortable, Isa::kAvx2, Isa::kAvx512}) {
    forceIsa(isa);
    auto e2 = encode(*codec, x);
    EXPECT_EQ(e2, enc) << isaName(activeIsa());
    auto y2 = decode(*codec, e2, x.size());
    EXPECT_EQ(0, std::memcmp(y2.data(), y.data(), y.size() * 4)) << isaName(activeIsa());
  }
  forceIsa(saved);
  std::vector<uint8_t> out(codec->encodedBytes(x.size()));
  EXPECT_EQ(codec->reduceEncoded(enc.data(), enc.data(), x.size(), out.data(), {}), ncclInvalidUsage);
}

TEST(CompressionCodec, RejectsBadConfigurationsAndCalls) {
  CodecConfig c;
  std::unique_ptr<Codec> codec;
  c.blockSize = 12;
  EXPECT_EQ(Codec::create(c, 100, &codec), ncclInvalidArgument);
  c.blockSize = 256;
  c.kind = CodecKind::kTopK;
  c.topkRatio = 0;
  EXPECT_EQ(Codec::create(c, 100, &codec), ncclInvalidArgument);
  c.topkRatio = 0.1;
  ASSERT_EQ(Codec::create(c, 100, &codec), ncclSuccess);
  std::vector<float> x(200);
  std::vector<uint8_t> enc(codec->encodedBytes(200));
  EXPECT_EQ(codec->encode(x.data(), ncclFloat32, 200, enc.data(), {}), ncclInvalidArgument);
  EXPECT_EQ(codec->encode(x.data(), ncclInt32, 100, enc.data(), {}), ncclInvalidArgument);
  CodecKind k;
  EXPECT_TRUE(parseCodecKind("topk-approx", &k));
  EXPECT_EQ(k, CodecKind::kTopKApprox);
  EXPECT_FALSE(parseCodecKind("zip", &k));
}

}  // namespace
}  // namespace weft::compression
