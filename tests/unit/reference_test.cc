// The test reference itself (tests/support/reference.h): a wrong result must fail. Exact
// results are compared exactly, NaN and infinities never pass, and the bound of a rounding
// average is one ulp, not the wide tolerance that let an all-zero fp8 sum pass.
#include "tests/support/reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "common/dtype.h"
#include "common/numeric.h"

using namespace weft;
using namespace weft::testing;

namespace {

constexpr size_t kCount = 257;

// A buffer holding the expected result of `op` over `nranks`, stored in `type`.
std::vector<char> expectedBuffer(int nranks, ncclDataType_t type, ncclRedOp_t op, unsigned seed) {
  std::vector<char> buffer(kCount * dataTypeSize(type));
  for (size_t i = 0; i < kCount; ++i)
    fromDouble(expectedReduction(nranks, i, type, op, seed), buffer.data() + i * dataTypeSize(type), type);
  return buffer;
}

TEST(Reference, InputsAreExactInEveryType) {
  for (ncclDataType_t type : kAllTypes)
    for (ncclRedOp_t op : kAllOps)
      for (int rank = 0; rank < 8; ++rank)
        for (size_t i = 0; i < kCount; ++i) {
          double v = inputValue(rank, i, type, op, 3);
          char stored[8];
          fromDouble(v, stored, type);
          ASSERT_EQ(toDouble(stored, type), v) << dataTypeName(type) << " " << redOpName(op);
          ASSERT_LE(std::fabs(v), maxInputMagnitude(type, op));
        }
}

TEST(Reference, SumsMaxMinAndProductsOfUpToEightRanksAreComparedExactly) {
  for (ncclDataType_t type : kAllTypes)
    for (ncclRedOp_t op : {ncclSum, ncclMax, ncclMin, ncclProd})
      for (int n = 1; n <= 8; ++n) {
        EXPECT_EQ(tolerance(1.0, n, type, op), 0.0) << dataTypeName(type) << " " << redOpName(op) << " " << n;
        if (op == ncclSum && exactIntegerLimit(type) > 0) {  // why a sum is exact: no partial sum exceeds the limit
          EXPECT_LE(n * maxInputMagnitude(type, op), exactIntegerLimit(type));
        }
      }
}

TEST(Reference, TheExpectedResultPassesForEveryTypeOpAndRankCount) {
  for (ncclDataType_t type : kAllTypes)
    for (ncclRedOp_t op : kAllOps)
      for (int n : {1, 2, 3, 4, 5, 7, 8}) {
        std::vector<char> good = expectedBuffer(n, type, op, 11);
        EXPECT_EQ(countMismatches(good.data(), kCount, n, type, op, 11, "good"), 0u)
            << dataTypeName(type) << " " << redOpName(op) << " " << n;
      }
}

TEST(Reference, AnAllZeroFp8SumOrAverageFails) {
  for (ncclDataType_t type : {ncclFloat8e4m3, ncclFloat8e5m2})
    for (ncclRedOp_t op : {ncclSum, ncclAvg})
      for (int n : {4, 8}) {
        std::vector<char> zeros(kCount * dataTypeSize(type), 0);
        EXPECT_GT(countMismatches(zeros.data(), kCount, n, type, op, 5, "zeros"), kCount / 2)
            << dataTypeName(type) << " " << redOpName(op) << " " << n;
      }
}

TEST(Reference, AnOffByOneSumFailsInEveryType) {
  for (ncclDataType_t type : kAllTypes)
    for (int n : {4, 8}) {
      std::vector<char> result = expectedBuffer(n, type, ncclSum, 6);
      const size_t size = dataTypeSize(type);
      size_t i = 0;  // an element whose successor is representable in every type
      while (isFloatingType(type) && std::fabs(expectedReduction(n, i, type, ncclSum, 6)) + 1 > exactIntegerLimit(type))
        ++i;
      ASSERT_LT(i, kCount);
      fromDouble(toDouble(result.data() + i * size, type) + 1, result.data() + i * size, type);
      EXPECT_EQ(countMismatches(result.data(), kCount, n, type, ncclSum, 6, "off by one"), 1u) << dataTypeName(type);
    }
}

TEST(Reference, NanAndInfinityNeverPass) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (ncclDataType_t type : kAllTypes) {
    if (!isFloatingType(type)) continue;
    for (ncclRedOp_t op : kAllOps)
      for (double bad : {nan, inf, -inf}) {
        std::vector<char> result = expectedBuffer(3, type, op, 8);
        fromDouble(bad, result.data() + 4 * dataTypeSize(type), type);
        EXPECT_EQ(countMismatches(result.data(), kCount, 3, type, op, 8, "bad"), 1u)
            << dataTypeName(type) << " " << redOpName(op) << " " << bad;
      }
  }
  EXPECT_TRUE(matches(nan, nan, 0));
  EXPECT_TRUE(matches(inf, inf, 0));
  EXPECT_FALSE(matches(-inf, inf, 1e300));
  EXPECT_FALSE(matches(nan, 1.0, 1e300));
}

TEST(Reference, AFloatingAverageMayBeOffByOneRoundingNotTwo) {
  // 3 ranks: the quotient is a multiple of 1/3, never exact in binary; one ulp of it passes, two fail.
  for (ncclDataType_t type : {ncclFloat8e4m3, ncclFloat8e5m2, ncclFloat16, ncclBfloat16, ncclFloat32}) {
    const double expected = 5.0 / 3.0;  // in [1, 2): one ulp is 2^-p
    const double ulp = std::ldexp(1.0, -(std::ilogb(exactIntegerLimit(type)) - 1));
    const double allowed = tolerance(expected, 3, type, ncclAvg);
    EXPECT_GE(allowed, ulp / 2) << dataTypeName(type);  // a correctly rounded quotient passes
    EXPECT_LT(allowed, 2 * ulp) << dataTypeName(type);
  }
  EXPECT_EQ(tolerance(-1.0, 3, ncclInt32, ncclAvg), 0.0);  // integer average truncates exactly
}

}  // namespace
