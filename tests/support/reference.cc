#include "tests/support/reference.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>

#include "common/dtype.h"
#include "common/numeric.h"

namespace weft::testing {

namespace {

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

bool isUnsigned(ncclDataType_t type) { return type == ncclUint8 || type == ncclUint32 || type == ncclUint64; }

// Stored fraction bits of a floating type (its precision is one more).
int fractionBits(ncclDataType_t type) {
  switch (type) {
    case ncclFloat8e4m3: return 3;
    case ncclFloat8e5m2: return 2;
    case ncclBfloat16: return 7;
    case ncclFloat16: return 10;
    case ncclFloat32: return 23;
    default: return 52;
  }
}

// The spacing of the type's subnormals: a rounding below the smallest normal errs by up to half of it.
double subnormalSpacing(ncclDataType_t type) {
  switch (type) {
    case ncclFloat8e4m3: return std::ldexp(1.0, -9);
    case ncclFloat8e5m2: return std::ldexp(1.0, -16);
    case ncclBfloat16: return std::ldexp(1.0, -133);
    case ncclFloat16: return std::ldexp(1.0, -24);
    case ncclFloat32: return std::ldexp(1.0, -149);
    default: return std::numeric_limits<double>::denorm_min();
  }
}

// Signed inputs lie in [-m, m], unsigned ones in [0, 2m].
int signedMagnitude(ncclDataType_t type) {
  switch (type) {
    case ncclFloat8e5m2: return 1;
    case ncclFloat8e4m3: return 2;
    default: return 4;
  }
}

}  // namespace

double maxInputMagnitude(ncclDataType_t type, ncclRedOp_t op) {
  if (op == ncclProd) return 3;
  return isUnsigned(type) ? 2 * signedMagnitude(type) : signedMagnitude(type);
}

double exactIntegerLimit(ncclDataType_t type) {
  return isFloatingType(type) ? std::ldexp(1.0, fractionBits(type) + 1) : 0;
}

double inputValue(int rank, size_t index, ncclDataType_t type, ncclRedOp_t op, unsigned seed) {
  uint64_t r = mix((static_cast<uint64_t>(seed) << 40) ^ (static_cast<uint64_t>(rank) << 32) ^ index);
  if (op == ncclProd) {
    // One rank carries a small factor; the rest multiply by 1 (or -1 for signed types).
    if (rank == static_cast<int>(index % 7)) return static_cast<double>(r % 4);
    if (isUnsigned(type)) return 1;
    return (r >> 8) & 1 ? 1 : -1;
  }
  const int m = signedMagnitude(type);
  if (isUnsigned(type)) return static_cast<double>(r % (2 * m + 1));
  return static_cast<double>(static_cast<int>(r % (2 * m + 1)) - m);
}

double expectedReduction(int nranks, size_t index, ncclDataType_t type, ncclRedOp_t op, unsigned seed) {
  double acc = inputValue(0, index, type, op, seed);
  for (int r = 1; r < nranks; ++r) {
    double v = inputValue(r, index, type, op, seed);
    switch (op) {
      case ncclSum:
      case ncclAvg: acc += v; break;
      case ncclProd: acc *= v; break;
      case ncclMax: acc = std::max(acc, v); break;
      case ncclMin: acc = std::min(acc, v); break;
      default: break;
    }
  }
  if (op == ncclAvg) {
    acc /= nranks;
    if (!isFloatingType(type)) acc = std::trunc(acc);  // integer average divides with truncation
  }
  return acc;
}

double tolerance(double expected, int nranks, ncclDataType_t type, ncclRedOp_t op) {
  // Integers are exact (wrap-around included); Max and Min select an input; products of the
  // inputs (+-1 and one factor up to 3) are exact in every type.
  if (!isFloatingType(type) || op == ncclMax || op == ncclMin || op == ncclProd) return 0;
  // Sum: every partial sum is an integer of magnitude at most S. Below the type's exact-integer
  // limit no addition rounds; above it each of the n - 1 additions rounds by at most half an
  // ulp of a value <= S, i.e. S * 2^-(p+1).
  const double unitRoundoff = std::ldexp(1.0, -(fractionBits(type) + 1));
  const double bound = nranks * maxInputMagnitude(type, op);
  const double sumError = bound <= exactIntegerLimit(type) ? 0 : (nranks - 1) * bound * unitRoundoff;
  if (op == ncclSum) return sumError;
  // Avg: the sum divided by n, rounded in the compute type (float for the narrow types) and
  // again in the type: each rounding is at most half an ulp of the quotient, both together less
  // than one ulp (2 * unitRoundoff relative), or a subnormal spacing below the normal range.
  const double quotientError = sumError / nranks;
  return quotientError + 2 * unitRoundoff * (std::fabs(expected) + quotientError) + subnormalSpacing(type);
}

bool matches(double actual, double expected, double allowed) {
  if (std::isnan(expected)) return std::isnan(actual);
  if (std::isinf(expected)) return actual == expected;
  return std::isfinite(actual) && std::fabs(actual - expected) <= allowed;
}

void fillInput(void* buffer, size_t count, int rank, ncclDataType_t type, ncclRedOp_t op, unsigned seed) {
  size_t size = dataTypeSize(type);
  for (size_t i = 0; i < count; ++i)
    fromDouble(inputValue(rank, i, type, op, seed), static_cast<char*>(buffer) + i * size, type);
}

size_t countMismatches(const void* result, size_t count, int nranks, ncclDataType_t type, ncclRedOp_t op, unsigned seed,
                       const char* label) {
  return countMismatchesAgainst(
      result, count, type, [&](size_t i) { return expectedReduction(nranks, i, type, op, seed); }, nranks, op, label);
}

size_t countMismatchesAgainst(const void* result, size_t count, ncclDataType_t type,
                              const std::function<double(size_t)>& expected, int nranks, ncclRedOp_t op,
                              const char* label) {
  size_t size = dataTypeSize(type);
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    double want = expected(i);
    double actual = toDouble(static_cast<const char*>(result) + i * size, type);
    if (!matches(actual, want, tolerance(want, nranks, type, op))) {
      if (wrong < 3)
        fprintf(stderr, "%s: element %zu is %.17g, expected %.17g (%s %s, %d ranks)\n", label, i, actual, want,
                dataTypeName(type), redOpName(op), nranks);
      ++wrong;
    }
  }
  return wrong;
}

}  // namespace weft::testing
