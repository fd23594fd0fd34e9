#include "tests/support/reference.h"

#include <cmath>
#include <cstdint>
#include <cstdio>

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

}  // namespace

double inputValue(int rank, size_t index, ncclDataType_t type, ncclRedOp_t op, unsigned seed) {
  uint64_t r = mix((static_cast<uint64_t>(seed) << 40) ^ (static_cast<uint64_t>(rank) << 32) ^ index);
  if (op == ncclProd) {
    // One rank carries a small factor; the rest multiply by 1 (or -1 for signed types).
    if (rank == static_cast<int>(index % 7)) return static_cast<double>(r % 4);
    if (isUnsigned(type)) return 1;
    return (r >> 8) & 1 ? 1 : -1;
  }
  if (isUnsigned(type)) return static_cast<double>(r % 9);
  return static_cast<double>(static_cast<int>(r % 9) - 4);
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

double tolerance(double expected, int nranks, ncclDataType_t type) {
  // Inputs are small integers, so every partial sum is exact except where the type has too few
  // mantissa bits (fp8) or the average divides; allow one rounding per reduction step there.
  double relative = 0;
  switch (type) {
    case ncclFloat8e4m3: relative = 1.0 / 16; break;
    case ncclFloat8e5m2: relative = 1.0 / 8; break;
    case ncclBfloat16: relative = 1.0 / 256; break;
    case ncclFloat16: relative = 1.0 / 2048; break;
    case ncclFloat32: relative = 1.0 / (1 << 23); break;
    case ncclFloat64: relative = 1e-15; break;
    default: return 0;
  }
  return relative * nranks * (std::fabs(expected) + 4.0 * nranks);
}

void fillInput(void* buffer, size_t count, int rank, ncclDataType_t type, ncclRedOp_t op, unsigned seed) {
  size_t size = dataTypeSize(type);
  for (size_t i = 0; i < count; ++i)
    fromDouble(inputValue(rank, i, type, op, seed), static_cast<char*>(buffer) + i * size, type);
}

size_t countMismatches(const void* result, size_t count, int nranks, ncclDataType_t type, ncclRedOp_t op, unsigned seed,
                       const char* label) {
  size_t size = dataTypeSize(type);
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    double expected = expectedReduction(nranks, i, type, op, seed);
    double actual = toDouble(static_cast<const char*>(result) + i * size, type);
    if (std::fabs(actual - expected) > tolerance(expected, nranks, type)) {
      if (wrong < 3)
        fprintf(stderr, "%s: element %zu is %g, expected %g (%s %s, %d ranks)\n", label, i, actual, expected,
                dataTypeName(type), redOpName(op), nranks);
      ++wrong;
    }
  }
  return wrong;
}

}  // namespace weft::testing
