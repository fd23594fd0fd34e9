// The reduction kernels of common/reduce.h on every instruction set this CPU runs, for every
// type, operation, aliasing and alignment, against a reference computed per element in double
// (long double for double) and rounded once to the type by fromDouble.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "common/dtype.h"
#include "common/numeric.h"
#include "common/reduce.h"

namespace weft {
namespace {

const size_t kCounts[] = {0, 1, 7, 33, 1000003};
const ReduceOp kOps[] = {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min};
const char* opName(ReduceOp op) {
  const char* names[] = {"sum", "prod", "max", "min"};
  return names[static_cast<int>(op)];
}

bool isSigned(ncclDataType_t t) { return t == ncclInt8 || t == ncclInt32 || t == ncclInt64; }

// An integer element as 64 bits (sign-extended for signed types), and back (truncated).
uint64_t readInt(const unsigned char* p, ncclDataType_t t) {
  switch (dataTypeSize(t)) {
    case 1: {
      uint8_t v;
      std::memcpy(&v, p, 1);
      return isSigned(t) ? static_cast<uint64_t>(static_cast<int8_t>(v)) : v;
    }
    case 4: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return isSigned(t) ? static_cast<uint64_t>(static_cast<int32_t>(v)) : v;
    }
    default: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
  }
}
void writeInt(uint64_t v, unsigned char* p, ncclDataType_t t) { std::memcpy(p, &v, dataTypeSize(t)); }  // little endian

bool intLess(uint64_t a, uint64_t b, ncclDataType_t t) {
  return isSigned(t) ? static_cast<int64_t>(a) < static_cast<int64_t>(b) : a < b;
}

// Random elements: all bit patterns for integers; for floating types, values spread over the
// type's range, with NaN, infinities and signed zeros sprinkled in.
std::vector<unsigned char> randomElements(ncclDataType_t t, size_t n, std::mt19937_64& rng) {
  size_t size = dataTypeSize(t);
  std::vector<unsigned char> out(n * size);
  if (!isFloatingType(t)) {
    for (auto& byte : out) byte = static_cast<unsigned char>(rng());
    return out;
  }
  int maxExp = t == ncclFloat16 ? 9 : t == ncclFloat8e4m3 ? 5 : t == ncclFloat8e5m2 ? 9 : t == ncclFloat64 ? 200 : 40;
  std::uniform_real_distribution<double> mantissa(-2.0, 2.0);
  std::uniform_int_distribution<int> exponent(-maxExp, maxExp);
  const double specials[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1.0};
  for (size_t i = 0; i < n; i++) {
    uint64_t r = rng();
    double v = (r & 63) == 0 ? specials[(r >> 6) % 6] : std::ldexp(mantissa(rng), exponent(rng));
    fromDouble(v, &out[i * size], t);
  }
  return out;
}

// Expected results, as elements of the type. `compute(i, precision)` computes element i in the
// type of `precision`: double, or long double for the type double.
template <class Compute>
std::vector<unsigned char> floatingReference(ncclDataType_t t, size_t n, Compute compute) {
  size_t size = dataTypeSize(t);
  std::vector<unsigned char> out(n * size);
  for (size_t i = 0; i < n; i++) {
    long double r = t == ncclFloat64 ? compute(i, 0.0L) : compute(i, 0.0);
    if (t == ncclFloat64) {
      double d = static_cast<double>(r);
      std::memcpy(&out[i * size], &d, 8);
    } else {
      fromDouble(static_cast<double>(r), &out[i * size], t);
    }
  }
  return out;
}

long double element(const std::vector<unsigned char>& v, size_t i, ncclDataType_t t) {
  if (t == ncclFloat64) {
    double d;
    std::memcpy(&d, &v[i * 8], 8);
    return d;
  }
  return toDouble(&v[i * dataTypeSize(t)], t);
}

// Equal bytes, or both NaN, or (double only: the reference was rounded from long double) one ulp.
void expectElementsMatch(const unsigned char* actual, const std::vector<unsigned char>& expected, size_t n,
                         ncclDataType_t t) {
  size_t size = dataTypeSize(t);
  if (n == 0 || std::memcmp(actual, expected.data(), n * size) == 0) return;
  int failures = 0;
  for (size_t i = 0; i < n && failures < 5; i++) {
    const unsigned char* a = actual + i * size;
    const unsigned char* e = &expected[i * size];
    if (std::memcmp(a, e, size) == 0) continue;
    if (isFloatingType(t)) {
      double av = toDouble(a, t), ev = toDouble(e, t);
      if (std::isnan(av) && std::isnan(ev)) continue;
      if (t == ncclFloat64 && std::isfinite(ev) && std::nextafter(ev, av) == av) continue;
      ADD_FAILURE() << dataTypeName(t) << " element " << i << " of " << n << ": got " << av << ", expected " << ev;
    } else {
      ADD_FAILURE() << dataTypeName(t) << " element " << i << " of " << n << ": got "
                    << static_cast<int64_t>(readInt(a, t)) << ", expected " << static_cast<int64_t>(readInt(e, t));
    }
    failures++;
  }
}

// A buffer with room for `n` elements at an offset of one element (to test misaligned
// pointers) and a guard element after them that the kernels must not touch.
struct Buffer {
  Buffer(size_t n, size_t size, bool misaligned) : bytes((n + 3) * size + 64), size(size) {
    size_t base = (64 - reinterpret_cast<uintptr_t>(bytes.data()) % 64) % 64;  // 64-byte aligned start
    data = bytes.data() + base + (misaligned ? size : 0);
    std::memset(data + n * size, 0x5a, size);
    end = n * size;
  }
  bool guardIntact() const {
    for (size_t i = 0; i < size; i++)
      if (data[end + i] != 0x5a) return false;
    return true;
  }
  std::vector<unsigned char> bytes;
  size_t size;
  size_t end;
  unsigned char* data;
};

class ReduceTest : public ::testing::TestWithParam<std::tuple<KernelIsa, ncclDataType_t>> {
 protected:
  void SetUp() override {
    saved_ = kernelIsa();
    if (!setKernelIsa(isa())) GTEST_SKIP() << "this CPU cannot run the " << kernelIsaName(isa()) << " kernels";
  }
  void TearDown() override { setKernelIsa(saved_); }
  KernelIsa isa() const { return std::get<0>(GetParam()); }
  ncclDataType_t type() const { return std::get<1>(GetParam()); }

  KernelIsa saved_ = KernelIsa::Portable;
};

enum class Alias { None, DstIsA, DstIsB };

TEST_P(ReduceTest, ReduceBuffersMatchesReference) {
  const ncclDataType_t t = type();
  const size_t size = dataTypeSize(t);
  std::mt19937_64 rng(42 + t);
  for (ReduceOp op : kOps) {
    for (size_t n : kCounts) {
      auto a = randomElements(t, n, rng);
      auto b = randomElements(t, n, rng);
      std::vector<unsigned char> expected;
      if (!isFloatingType(t)) {
        expected.resize(n * size);
        for (size_t i = 0; i < n; i++) {
          uint64_t x = readInt(&a[i * size], t), y = readInt(&b[i * size], t);
          uint64_t r = op == ReduceOp::Sum    ? x + y
                       : op == ReduceOp::Prod ? x * y
                       : op == ReduceOp::Max  ? (intLess(y, x, t) ? x : y)
                                              : (intLess(x, y, t) ? x : y);
          writeInt(r, &expected[i * size], t);
        }
      } else {
        // Max/Min: NaN if either is NaN, else a if strictly greater (less), else b.
        expected = floatingReference(t, n, [&](size_t i, auto precision) {
          using R = decltype(precision);
          R x = element(a, i, t), y = element(b, i, t);
          switch (op) {
            case ReduceOp::Sum: return x + y;
            case ReduceOp::Prod: return x * y;
            case ReduceOp::Max: return std::isnan(x) || std::isnan(y) ? R(NAN) : x > y ? x : y;
            default: return std::isnan(x) || std::isnan(y) ? R(NAN) : x < y ? x : y;
          }
        });
      }
      for (Alias alias : {Alias::None, Alias::DstIsA, Alias::DstIsB}) {
        for (bool misaligned : {false, true}) {
          SCOPED_TRACE(std::string(opName(op)) + " count " + std::to_string(n) + " alias " +
                       std::to_string(static_cast<int>(alias)) + (misaligned ? " misaligned" : ""));
          Buffer ba(n, size, misaligned), bb(n, size, misaligned), bd(n, size, misaligned);
          if (n) std::memcpy(ba.data, a.data(), n * size);
          if (n) std::memcpy(bb.data, b.data(), n * size);
          Buffer& dst = alias == Alias::DstIsA ? ba : alias == Alias::DstIsB ? bb : bd;
          reduceBuffers(dst.data, ba.data, bb.data, n, t, op);
          expectElementsMatch(dst.data, expected, n, t);
          EXPECT_TRUE(dst.guardIntact()) << "wrote past the end";
        }
      }
    }
  }
}

TEST_P(ReduceTest, ScaleAndDivideMatchReference) {
  const ncclDataType_t t = type();
  const size_t size = dataTypeSize(t);
  std::mt19937_64 rng(7 + t);
  for (size_t n : kCounts) {
    auto src = randomElements(t, n, rng);
    // Scale by a few scalars of the type.
    for (double s : {0.5, 3.0, -1.75}) {
      unsigned char scalar[8];
      fromDouble(s, scalar, t);
      std::vector<unsigned char> expected;
      if (!isFloatingType(t)) {
        expected.resize(n * size);
        uint64_t factor = readInt(scalar, t);
        for (size_t i = 0; i < n; i++) writeInt(readInt(&src[i * size], t) * factor, &expected[i * size], t);
      } else {
        double factor = toDouble(scalar, t);
        expected = floatingReference(t, n, [&](size_t i, auto precision) {
          using R = decltype(precision);
          return static_cast<R>(element(src, i, t)) * static_cast<R>(factor);
        });
      }
      for (bool inPlace : {false, true}) {
        for (bool misaligned : {false, true}) {
          SCOPED_TRACE("scale " + std::to_string(s) + " count " + std::to_string(n) + (inPlace ? " in place" : "") +
                       (misaligned ? " misaligned" : ""));
          Buffer bs(n, size, misaligned), bd(n, size, misaligned);
          if (n) std::memcpy(bs.data, src.data(), n * size);
          Buffer& dst = inPlace ? bs : bd;
          scaleBuffer(dst.data, bs.data, n, t, scalar);
          expectElementsMatch(dst.data, expected, n, t);
          EXPECT_TRUE(dst.guardIntact());
        }
      }
    }
    // Divide (ncclAvg) by rank counts, and by huge divisors for the integer edge cases.
    for (uint64_t d : {1ull, 3ull, 7ull, 1000ull, 1ull << 31, 1ull << 33, 1ull << 63}) {
      if (isFloatingType(t) && d > 1000) continue;
      std::vector<unsigned char> expected;
      if (!isFloatingType(t)) {
        expected.resize(n * size);
        for (size_t i = 0; i < n; i++) {
          uint64_t x = readInt(&src[i * size], t);
          uint64_t q;
          if (!isSigned(t)) {
            q = x / d;
          } else {
            // Truncating signed division with an unsigned divisor, in 128 bits to cover d >= 2^63.
            __int128 r = static_cast<__int128>(static_cast<int64_t>(x)) / static_cast<__int128>(d);
            q = static_cast<uint64_t>(static_cast<int64_t>(r));
          }
          writeInt(q, &expected[i * size], t);
        }
      } else {
        expected = floatingReference(t, n, [&](size_t i, auto precision) {
          using R = decltype(precision);
          return static_cast<R>(element(src, i, t)) / static_cast<R>(d);
        });
      }
      for (bool inPlace : {false, true}) {
        for (bool misaligned : {false, true}) {
          SCOPED_TRACE("divide " + std::to_string(d) + " count " + std::to_string(n) + (inPlace ? " in place" : "") +
                       (misaligned ? " misaligned" : ""));
          Buffer bs(n, size, misaligned), bd(n, size, misaligned);
          if (n) std::memcpy(bs.data, src.data(), n * size);
          Buffer& dst = inPlace ? bs : bd;
          divideBuffer(dst.data, bs.data, n, t, d);
          expectElementsMatch(dst.data, expected, n, t);
          EXPECT_TRUE(dst.guardIntact());
        }
      }
    }
  }
}

// Max/Min return NaN when either input is NaN, whichever side it is on, in the vector body
// and in the scalar tail alike.
class ReduceNaNTest : public ReduceTest {};

TEST_P(ReduceNaNTest, MaxMinPropagateNaN) {
  const ncclDataType_t t = type();
  const size_t size = dataTypeSize(t), n = 37;
  std::vector<unsigned char> a(n * size), b(n * size), d(n * size);
  for (size_t i = 0; i < n; i++) {
    fromDouble(i % 2 ? NAN : 1.0, &a[i * size], t);
    fromDouble(i % 2 ? 2.0 : NAN, &b[i * size], t);
  }
  for (ReduceOp op : {ReduceOp::Max, ReduceOp::Min}) {
    reduceBuffers(d.data(), a.data(), b.data(), n, t, op);
    for (size_t i = 0; i < n; i++) EXPECT_TRUE(std::isnan(toDouble(&d[i * size], t))) << opName(op) << " element " << i;
    reduceBuffers(d.data(), b.data(), a.data(), n, t, op);
    for (size_t i = 0; i < n; i++) EXPECT_TRUE(std::isnan(toDouble(&d[i * size], t))) << opName(op) << " element " << i;
  }
}

}  // namespace

void PrintTo(KernelIsa isa, std::ostream* os) { *os << kernelIsaName(isa); }

namespace {

std::string caseName(const ::testing::TestParamInfo<ReduceTest::ParamType>& info) {
  return std::string(kernelIsaName(std::get<0>(info.param))) + "_" + dataTypeName(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Reduce, ReduceTest,
                         ::testing::Combine(::testing::Values(KernelIsa::Portable, KernelIsa::Avx2, KernelIsa::Avx512),
                                            ::testing::Values(ncclInt8, ncclUint8, ncclInt32, ncclUint32, ncclInt64,
                                                              ncclUint64, ncclFloat16, ncclFloat32, ncclFloat64,
                                                              ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2)),
                         caseName);
INSTANTIATE_TEST_SUITE_P(Reduce, ReduceNaNTest,
                         ::testing::Combine(::testing::Values(KernelIsa::Portable, KernelIsa::Avx2, KernelIsa::Avx512),
                                            ::testing::Values(ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16,
                                                              ncclFloat8e4m3, ncclFloat8e5m2)),
                         caseName);

TEST(ReduceDispatch, PicksBestIsaAndCanSwitch) {
  KernelIsa best = kernelIsa();
  EXPECT_TRUE(kernelIsaSupported(best));
  EXPECT_TRUE(setKernelIsa(KernelIsa::Portable));
  EXPECT_EQ(kernelIsa(), KernelIsa::Portable);
  float a[2] = {1.5f, -2.0f}, b[2] = {2.25f, 0.5f}, d[2];
  reduceBuffers(d, a, b, 2, ncclFloat32, ReduceOp::Sum);
  EXPECT_EQ(d[0], 3.75f);
  EXPECT_EQ(d[1], -1.5f);
  EXPECT_TRUE(setKernelIsa(best));
  std::printf("reduction kernels here: %s\n", kernelIsaName(best));
}

}  // namespace
}  // namespace weft
