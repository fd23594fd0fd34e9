// Conversions of common/numeric.h and the facts of common/dtype.h, checked against slow
// references written independently in double arithmetic (frexp/ldexp/nearbyint).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "common/dtype.h"
#include "common/numeric.h"

namespace weft {
namespace {

// A narrow floating format, described the way the standards describe it.
struct Format {
  const char* name;
  int totalBits;
  int exponentBits;
  int mantissaBits;  // stored (without the implicit bit)
  bool hasInfinity;  // IEEE-like; E4M3FN has none and only S.1111.111 is NaN
  bool saturates;    // out-of-range values become the largest finite value
  float (*toFloat)(uint32_t);
  uint32_t (*fromFloat)(float);
  int bias() const { return (1 << (exponentBits - 1)) - 1; }
  int minExponent() const { return 1 - bias(); }  // exponent of the smallest normal
};

const Format kHalf{"half",
                   16,
                   5,
                   10,
                   true,
                   false,
                   [](uint32_t v) { return halfToFloat(static_cast<uint16_t>(v)); },
                   [](float f) -> uint32_t { return floatToHalf(f); }};
const Format kBfloat16{"bfloat16",
                       16,
                       8,
                       7,
                       true,
                       false,
                       [](uint32_t v) { return bfloat16ToFloat(static_cast<uint16_t>(v)); },
                       [](float f) -> uint32_t { return floatToBfloat16(f); }};
const Format kE4m3{"f8e4m3",
                   8,
                   4,
                   3,
                   false,
                   true,
                   [](uint32_t v) { return fp8e4m3ToFloat(static_cast<uint8_t>(v)); },
                   [](float f) -> uint32_t { return floatToFp8e4m3(f); }};
const Format kE5m2{"f8e5m2",
                   8,
                   5,
                   2,
                   true,
                   false,
                   [](uint32_t v) { return fp8e5m2ToFloat(static_cast<uint8_t>(v)); },
                   [](float f) -> uint32_t { return floatToFp8e5m2(f); }};

// Reference decoding straight from the definition: (-1)^s * 1.m * 2^(e - bias), subnormals
// 0.m * 2^(1 - bias). Returns NaN for NaN encodings.
double refDecode(const Format& f, uint32_t bits) {
  uint32_t mantissa = bits & ((1u << f.mantissaBits) - 1);
  uint32_t exponent = (bits >> f.mantissaBits) & ((1u << f.exponentBits) - 1);
  bool negative = (bits >> (f.totalBits - 1)) & 1;
  uint32_t maxExponent = (1u << f.exponentBits) - 1;
  double value;
  if (f.hasInfinity && exponent == maxExponent) {
    value = mantissa == 0 ? INFINITY : NAN;
  } else if (!f.hasInfinity && exponent == maxExponent && mantissa == (1u << f.mantissaBits) - 1) {
    value = NAN;
  } else if (exponent == 0) {
    value = std::ldexp(static_cast<double>(mantissa), f.minExponent() - f.mantissaBits);
  } else {
    value = std::ldexp(static_cast<double>(mantissa + (1u << f.mantissaBits)),
                       static_cast<int>(exponent) - f.bias() - f.mantissaBits);
  }
  return negative ? -value : value;
}

double computeMaxFinite(const Format& f) {
  double largest = 0;
  for (uint32_t b = 0; b < (1u << (f.totalBits - 1)); b++) {
    double v = refDecode(f, b);
    if (std::isfinite(v)) largest = std::max(largest, v);
  }
  return largest;
}

double maxFinite(const Format& f) {
  static const std::map<const Format*, double> cache = [] {
    std::map<const Format*, double> m;
    for (const Format* format : {&kHalf, &kBfloat16, &kE4m3, &kE5m2}) m[format] = computeMaxFinite(*format);
    return m;
  }();
  return cache.at(&f);
}

// Reference rounding of x to the format: to nearest, ties to even, with an unbounded exponent
// range above and the format's subnormal quantum below; then overflow handling.
double refRound(const Format& f, double x) {
  if (std::isnan(x)) return NAN;
  double largest = maxFinite(f);
  if (std::isinf(x)) return f.saturates ? std::copysign(largest, x) : x;
  if (x == 0) return x;
  int e;
  std::frexp(std::fabs(x), &e);  // |x| in [2^(e-1), 2^e)
  int lead = std::max(e - 1, f.minExponent());
  double quantum = std::ldexp(1.0, lead - f.mantissaBits);
  double rounded = std::nearbyint(x / quantum) * quantum;  // default mode: ties to even
  if (rounded == 0) return std::copysign(0.0, x);
  if (std::fabs(rounded) > largest) return f.saturates ? std::copysign(largest, x) : std::copysign(INFINITY, x);
  return rounded;
}

bool sameValue(double expected, double actual) {
  if (std::isnan(expected)) return std::isnan(actual);
  return expected == actual && std::signbit(expected) == std::signbit(actual);
}

// Every encoding decodes to its definition.
void checkDecodeAll(const Format& f) {
  for (uint32_t bits = 0; bits < (1u << f.totalBits); bits++) {
    double expected = refDecode(f, bits);
    float actual = f.toFloat(bits);
    ASSERT_TRUE(sameValue(expected, actual)) << f.name << " 0x" << std::hex << bits << ": " << actual;
    // bfloat16 widens by a bare shift (as PyTorch and the hardware do): a signaling NaN stays
    // signaling. The other decoders return quiet NaNs.
    if (std::isnan(actual) && &f != &kBfloat16) {
      EXPECT_TRUE(std::bit_cast<uint32_t>(actual) & 0x00400000u) << f.name << " NaN not quiet, 0x" << std::hex << bits;
    }
  }
}

// Every non-NaN encoding survives decode + encode unchanged; NaN stays NaN.
void checkRoundTripAll(const Format& f) {
  for (uint32_t bits = 0; bits < (1u << f.totalBits); bits++) {
    float value = f.toFloat(bits);
    uint32_t back = f.fromFloat(value);
    if (std::isnan(value)) {
      EXPECT_TRUE(std::isnan(f.toFloat(back))) << f.name << " 0x" << std::hex << bits;
    } else {
      ASSERT_EQ(back, bits) << f.name << " " << value;
    }
  }
}

// Floats that probe every rounding decision: each representable value, the midpoints between
// neighbours (ties), one float ulp either side of them, specials, and random bit patterns.
std::vector<float> probeValues(const Format& f) {
  std::vector<double> grid;
  for (uint32_t bits = 0; bits < (1u << (f.totalBits - 1)); bits++) {
    double v = refDecode(f, bits);
    if (std::isfinite(v)) grid.push_back(v);
  }
  std::sort(grid.begin(), grid.end());
  grid.push_back(grid.back() * 2);  // the next binade: midpoints up there decide overflow
  std::vector<float> probes;
  for (size_t i = 0; i + 1 < grid.size(); i++) {
    float mid = static_cast<float>((grid[i] + grid[i + 1]) / 2);
    for (float v : {static_cast<float>(grid[i]), mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)}) {
      probes.push_back(v);
      probes.push_back(-v);
    }
  }
  for (float v : {0.0f, -0.0f, INFINITY, -INFINITY, std::numeric_limits<float>::max(),
                  std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min(), 1e-30f, 1e30f}) {
    probes.push_back(v);
    probes.push_back(-v);
  }
  std::mt19937 rng(1234);
  for (int i = 0; i < 1000000; i++) {
    float v = std::bit_cast<float>(static_cast<uint32_t>(rng()));
    if (!std::isnan(v)) probes.push_back(v);
  }
  return probes;
}

void checkEncode(const Format& f) {
  int failures = 0;
  for (float x : probeValues(f)) {
    double expected = refRound(f, x);
    double actual = f.toFloat(f.fromFloat(x));
    if (!sameValue(expected, actual) && ++failures <= 10) {
      ADD_FAILURE() << f.name << ": " << std::hexfloat << x << " -> " << actual << ", expected " << expected;
    }
  }
  EXPECT_EQ(failures, 0);
  // NaN in, NaN out.
  for (uint32_t nan : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fbfffffu}) {
    EXPECT_TRUE(std::isnan(f.toFloat(f.fromFloat(std::bit_cast<float>(nan))))) << f.name << std::hex << nan;
  }
}

TEST(NumericHalf, DecodesEveryPattern) { checkDecodeAll(kHalf); }
TEST(NumericHalf, RoundTripsEveryPattern) { checkRoundTripAll(kHalf); }
TEST(NumericHalf, EncodesLikeReference) { checkEncode(kHalf); }
TEST(NumericHalf, KnownValues) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65519.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);  // the tie rounds to even: infinity
  EXPECT_EQ(floatToHalf(0x1p-24f), 0x0001);  // smallest subnormal
  EXPECT_EQ(floatToHalf(0x1p-25f), 0x0000);  // the tie below it rounds to even: zero
  EXPECT_EQ(floatToHalf(0x1.8p-25f), 0x0001);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(halfToFloat(0x0001), 0x1p-24f);
  EXPECT_EQ(halfToFloat(0x0400), 0x1p-14f);
  // NaN keeps the top of its payload and becomes quiet.
  EXPECT_EQ(floatToHalf(std::bit_cast<float>(0x7f802000u)), 0x7e01);
  EXPECT_EQ(std::bit_cast<uint32_t>(halfToFloat(0x7c01)), 0x7fc02000u);
}

TEST(NumericBfloat16, DecodesEveryPattern) { checkDecodeAll(kBfloat16); }
TEST(NumericBfloat16, RoundTripsEveryPattern) { checkRoundTripAll(kBfloat16); }
TEST(NumericBfloat16, EncodesLikeReference) { checkEncode(kBfloat16); }
TEST(NumericBfloat16, KnownValues) {
  EXPECT_EQ(floatToBfloat16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBfloat16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie to even (down)
  EXPECT_EQ(floatToBfloat16(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie to even (up)
  EXPECT_EQ(floatToBfloat16(std::numeric_limits<float>::max()), 0x7f80);  // rounds to infinity
  EXPECT_EQ(floatToBfloat16(std::bit_cast<float>(0x7f800001u)), 0x7fc0);  // NaN stays NaN
}

TEST(NumericFp8, E4m3DecodesEveryPattern) { checkDecodeAll(kE4m3); }
TEST(NumericFp8, E4m3RoundTripsEveryPattern) { checkRoundTripAll(kE4m3); }
TEST(NumericFp8, E4m3EncodesLikeReference) { checkEncode(kE4m3); }
TEST(NumericFp8, E5m2DecodesEveryPattern) { checkDecodeAll(kE5m2); }
TEST(NumericFp8, E5m2RoundTripsEveryPattern) { checkRoundTripAll(kE5m2); }
TEST(NumericFp8, E5m2EncodesLikeReference) { checkEncode(kE5m2); }
TEST(NumericFp8, E4m3KnownValues) {
  EXPECT_EQ(fp8e4m3ToFloat(0x7e), 448.0f);
  EXPECT_EQ(fp8e4m3ToFloat(0x01), 0x1p-9f);
  EXPECT_EQ(fp8e4m3ToFloat(0x08), 0x1p-6f);
  EXPECT_EQ(fp8e4m3ToFloat(0x38), 1.0f);
  EXPECT_TRUE(std::isnan(fp8e4m3ToFloat(0x7f)));
  EXPECT_TRUE(std::isnan(fp8e4m3ToFloat(0xff)));
  EXPECT_EQ(fp8e4m3ToFloat(0x78), 256.0f);  // S.1111.000 is a number in E4M3FN
  // Saturation as __NV_SATFINITE: finite overflow and infinity become +-448, NaN is 0x7f.
  EXPECT_EQ(floatToFp8e4m3(464.0f), 0x7e);
  EXPECT_EQ(floatToFp8e4m3(1e6f), 0x7e);
  EXPECT_EQ(floatToFp8e4m3(-1e6f), 0xfe);
  EXPECT_EQ(floatToFp8e4m3(INFINITY), 0x7e);
  EXPECT_EQ(floatToFp8e4m3(-INFINITY), 0xfe);
  EXPECT_EQ(floatToFp8e4m3(NAN), 0x7f);
  EXPECT_EQ(floatToFp8e4m3(0x1p-10f), 0x00);  // tie to even below the smallest subnormal
  EXPECT_EQ(floatToFp8e4m3(0x1.8p-10f), 0x01);
}
TEST(NumericFp8, E5m2KnownValues) {
  EXPECT_EQ(fp8e5m2ToFloat(0x7b), 57344.0f);
  EXPECT_EQ(fp8e5m2ToFloat(0x01), 0x1p-16f);
  EXPECT_EQ(fp8e5m2ToFloat(0x7c), INFINITY);
  EXPECT_EQ(fp8e5m2ToFloat(0xfc), -INFINITY);
  EXPECT_TRUE(std::isnan(fp8e5m2ToFloat(0x7d)));
  EXPECT_EQ(floatToFp8e5m2(61439.0f), 0x7b);
  EXPECT_EQ(floatToFp8e5m2(61440.0f), 0x7c);  // the tie rounds to even: infinity
  EXPECT_EQ(floatToFp8e5m2(-1e6f), 0xfc);
  EXPECT_TRUE(std::isnan(fp8e5m2ToFloat(floatToFp8e5m2(NAN))));
}

// ---- toDouble / fromDouble ----

TEST(NumericElement, RoundTripsEveryType) {
  for (int t = 0; t < ncclNumTypes; t++) {
    auto type = static_cast<ncclDataType_t>(t);
    for (double v : {0.0, 1.0, 3.0, 12.0, 96.0}) {
      alignas(8) unsigned char element[8] = {};
      fromDouble(v, element, type);
      EXPECT_EQ(toDouble(element, type), v) << dataTypeName(type);
    }
  }
}

TEST(NumericElement, IntegersWrapLikeCasts) {
  alignas(8) unsigned char e[8];
  fromDouble(-1.0, e, ncclUint8);
  EXPECT_EQ(toDouble(e, ncclUint8), 255.0);
  fromDouble(300.0, e, ncclInt8);
  EXPECT_EQ(toDouble(e, ncclInt8), 44.0);
  fromDouble(-2.7, e, ncclInt32);
  EXPECT_EQ(toDouble(e, ncclInt32), -2.0);
  fromDouble(0x1p63, e, ncclInt64);
  EXPECT_EQ(toDouble(e, ncclInt64), -0x1p63);
  fromDouble(0x1p64 - 2048, e, ncclUint64);
  EXPECT_EQ(toDouble(e, ncclUint64), 0x1p64 - 2048);
  fromDouble(NAN, e, ncclInt32);
  EXPECT_EQ(toDouble(e, ncclInt32), 0.0);
}

TEST(NumericElement, NarrowFloatsRoundOnceFromDouble) {
  // Just above the tie between 1 and 1 + 2^-10: via float it would become the tie and round
  // to 1; rounded once it must go up.
  double x = 1.0 + 0x1p-11 + 0x1p-40;
  alignas(8) unsigned char e[8];
  fromDouble(x, e, ncclFloat16);
  EXPECT_EQ(toDouble(e, ncclFloat16), 1.0 + 0x1p-10);
  fromDouble(1.0 + 0x1p-8 + 0x1p-40, e, ncclBfloat16);
  EXPECT_EQ(toDouble(e, ncclBfloat16), 1.0 + 0x1p-7);
  fromDouble(1.0 + 0x1p-4 + 0x1p-40, e, ncclFloat8e4m3);
  EXPECT_EQ(toDouble(e, ncclFloat8e4m3), 1.0 + 0x1p-3);
  // Random doubles against the reference rounding.
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> mantissa(-2.0, 2.0);
  std::uniform_int_distribution<int> exponent(-30, 20);
  for (int i = 0; i < 200000; i++) {
    double v = std::ldexp(mantissa(rng), exponent(rng));
    fromDouble(v, e, ncclFloat16);
    ASSERT_TRUE(sameValue(refRound(kHalf, v), toDouble(e, ncclFloat16))) << std::hexfloat << v;
    fromDouble(v, e, ncclBfloat16);
    ASSERT_TRUE(sameValue(refRound(kBfloat16, v), toDouble(e, ncclBfloat16))) << std::hexfloat << v;
    fromDouble(v, e, ncclFloat8e4m3);
    ASSERT_TRUE(sameValue(refRound(kE4m3, v), toDouble(e, ncclFloat8e4m3))) << std::hexfloat << v;
    fromDouble(v, e, ncclFloat8e5m2);
    ASSERT_TRUE(sameValue(refRound(kE5m2, v), toDouble(e, ncclFloat8e5m2))) << std::hexfloat << v;
  }
}

// ---- dtype.h ----

TEST(NumericDataType, SizesAndNames) {
  const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  const char* names[] = {"int8", "uint8", "int32",  "uint32",   "int64",  "uint64",
                         "half", "float", "double", "bfloat16", "f8e4m3", "f8e5m2"};
  for (int t = 0; t < ncclNumTypes; t++) {
    auto type = static_cast<ncclDataType_t>(t);
    EXPECT_TRUE(isValidDataType(t));
    EXPECT_EQ(dataTypeSize(type), sizes[t]);
    EXPECT_STREQ(dataTypeName(type), names[t]);
    EXPECT_EQ(isFloatingType(type), t >= ncclFloat16);
  }
  EXPECT_FALSE(isValidDataType(-1));
  EXPECT_FALSE(isValidDataType(ncclNumTypes));
  EXPECT_EQ(dataTypeSize(static_cast<ncclDataType_t>(ncclNumTypes)), 0u);
  EXPECT_EQ(dataTypeSize(static_cast<ncclDataType_t>(-3)), 0u);
}

TEST(NumericDataType, OperatorNames) {
  EXPECT_STREQ(redOpName(ncclSum), "sum");
  EXPECT_STREQ(redOpName(ncclProd), "prod");
  EXPECT_STREQ(redOpName(ncclMax), "max");
  EXPECT_STREQ(redOpName(ncclMin), "min");
  EXPECT_STREQ(redOpName(ncclAvg), "avg");
  EXPECT_STREQ(redOpName(ncclNumOps), "premulsum");
  EXPECT_STREQ(redOpName(static_cast<ncclRedOp_t>(ncclNumOps + 3)), "premulsum");
}

}  // namespace
}  // namespace weft
