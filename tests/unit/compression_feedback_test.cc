// Error feedback conserves mass: sum(sent) + residual == sum(inputs), up to float rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "common/numeric.h"
#include "compression/error_feedback.h"
#include "tests/support/compression_test_util.h"

namespace weft::compression {
namespace {

using testing::Dist;

class CompressionFeedback : public ::testing::TestWithParam<CodecKind> {};

TEST_P(CompressionFeedback, ConservesMass) {
  CodecConfig c;
  c.kind = GetParam();
  c.blockSize = 128;
  c.rounding = c.kind == CodecKind::kInt4 ? Rounding::kStochastic : Rounding::kNearest;
  c.topkRatio = 0.02;
  const size_t n = 50000, chunk = 128 * 100;  // chunks at block multiples
  std::unique_ptr<Codec> codec;
  ASSERT_EQ(Codec::create(c, chunk, &codec), ncclSuccess);
  ErrorFeedback ef(n);
  std::vector<double> inputs(n, 0.0), sent(n, 0.0);
  std::vector<uint8_t> enc(codec->encodedBytes(chunk));
  std::vector<float> dec(chunk);
  double absSum = 0;
  for (int step = 0; step < 5; ++step) {
    // fp16 overflows beyond 65504 (documented); keep its gradients in range.
    bool heavy = step % 2 == 1 && c.kind != CodecKind::kFp16;
    auto g = testing::makeData(heavy ? Dist::kHeavyTail : Dist::kNormal, n, 30 + step);
    for (size_t off = 0; off < n; off += chunk) {
      size_t m = std::min(chunk, n - off);
      ASSERT_EQ(ef.encode(*codec, g.data() + off, ncclFloat32, off, m, enc.data(),
                          EncodeContext{static_cast<uint64_t>(step), off}),
                ncclSuccess);
      ASSERT_EQ(codec->decode(enc.data(), m, dec.data(), ncclFloat32), ncclSuccess);
      for (size_t i = 0; i < m; ++i) {
        sent[off + i] += dec[i];
        inputs[off + i] += g[off + i];
        absSum += std::fabs(g[off + i]) + std::fabs(dec[i]);
      }
    }
  }
  // Per element and in total: sent + residual == inputs up to rounding of the float steps.
  double total = 0;
  for (size_t i = 0; i < n; ++i) {
    double diff = sent[i] + ef.residual()[i] - inputs[i];
    total += diff;
    double mag = std::fabs(inputs[i]) + std::fabs(sent[i]) + std::fabs(ef.residual()[i]);
    ASSERT_LE(std::fabs(diff), 1e-5 * (mag + 1.0) * 5) << i;
  }
  EXPECT_LE(std::fabs(total), 1e-6 * absSum);
}

INSTANTIATE_TEST_SUITE_P(All, CompressionFeedback,
                         ::testing::Values(CodecKind::kFp16, CodecKind::kBf16, CodecKind::kInt8, CodecKind::kInt4,
                                           CodecKind::kSign, CodecKind::kTopK, CodecKind::kTopKApprox),
                         [](const auto& info) {
                           std::string s = codecName(info.param);
                           for (char& ch : s)
                             if (ch == '-') ch = '_';
                           return s;
                         });

TEST(CompressionFeedback, HalfGradientsAndRangeChecks) {
  CodecConfig c;
  c.kind = CodecKind::kSign;
  c.blockSize = 64;
  std::unique_ptr<Codec> codec;
  ASSERT_EQ(Codec::create(c, 1024, &codec), ncclSuccess);
  ErrorFeedback ef(1024);
  auto x = testing::makeData(Dist::kNormal, 1024, 40);
  std::vector<uint16_t> h(1024);
  for (size_t i = 0; i < h.size(); ++i) h[i] = floatToHalf(x[i]);
  std::vector<uint8_t> enc(codec->encodedBytes(1024));
  ASSERT_EQ(ef.encode(*codec, h.data(), ncclFloat16, 0, 1024, enc.data(), {}), ncclSuccess);
  std::vector<float> dec(1024);
  ASSERT_EQ(codec->decode(enc.data(), 1024, dec.data(), ncclFloat32), ncclSuccess);
  for (size_t i = 0; i < 1024; ++i) ASSERT_NEAR(dec[i] + ef.residual()[i], halfToFloat(h[i]), 1e-6);
  EXPECT_EQ(ef.encode(*codec, h.data(), ncclFloat16, 512, 1024, enc.data(), {}), ncclInvalidArgument);
}

}  // namespace
}  // namespace weft::compression
