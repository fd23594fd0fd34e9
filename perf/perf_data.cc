#include "perf/perf_data.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

namespace weft::perf {
namespace {

constexpr double kCap = 1 << 20;  // keeps wide types' values readable and exact in double

const TypeInfo kTypes[] = {
    {ncclInt8, "int8", 1, false, true, 127, 6, 0, 0},
    // 255 is the poison value of uint8, so results stay below it.
    {ncclUint8, "uint8", 1, false, false, 254, 7, 0, 0},
    {ncclInt32, "int32", 4, false, true, kCap, 30, 0, 0},
    {ncclUint32, "uint32", 4, false, false, kCap, 30, 0, 0},
    {ncclInt64, "int64", 8, false, true, kCap, 30, 0, 0},
    {ncclUint64, "uint64", 8, false, false, kCap, 30, 0, 0},
    {ncclFloat16, "half", 2, true, true, 2048, 15, 0x1p-10, 0x1p-24},
    {ncclFloat32, "float", 4, true, true, kCap, 30, 0x1p-23, 0x1p-149},
    {ncclFloat64, "double", 8, true, true, kCap, 30, 0x1p-52, 0x1p-1074},
    {ncclBfloat16, "bfloat16", 2, true, true, 256, 30, 0x1p-7, 0x1p-133},
    {ncclFloat8e4m3, "f8e4m3", 1, true, true, 16, 8, 0x1p-3, 0x1p-9},
    {ncclFloat8e5m2, "f8e5m2", 1, true, true, 8, 15, 0x1p-2, 0x1p-16},
};

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

template <typename T>
T loadAs(const void* buffer, size_t index) {
  T v;
  std::memcpy(&v, static_cast<const char*>(buffer) + index * sizeof(T), sizeof(T));
  return v;
}

template <typename T>
void storeAs(void* buffer, size_t index, T v) {
  std::memcpy(static_cast<char*>(buffer) + index * sizeof(T), &v, sizeof(T));
}

// Integers saturate to the type's range (the data never needs it; it keeps casts defined).
template <typename T>
T toInteger(double v) {
  if (std::isnan(v)) return 0;
  double r = std::nearbyint(v);
  if (r <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  if (r >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(r);
}

}  // namespace

const MiniFloatFormat kHalfFormat = {5, 10, 15, true};
const MiniFloatFormat kBfloat16Format = {8, 7, 127, true};
const MiniFloatFormat kE4m3Format = {4, 3, 7, false};
const MiniFloatFormat kE5m2Format = {5, 2, 15, true};

const TypeInfo& typeInfo(ncclDataType_t type) {
  for (const TypeInfo& t : kTypes)
    if (t.type == type) return t;
  return kTypes[7];  // float; callers validate types first
}
size_t typeSize(ncclDataType_t type) { return typeInfo(type).size; }
const char* typeName(ncclDataType_t type) { return typeInfo(type).name; }

const char* opName(ncclRedOp_t op) {
  switch (op) {
    case ncclSum: return "sum";
    case ncclProd: return "prod";
    case ncclMax: return "max";
    case ncclMin: return "min";
    case ncclAvg: return "avg";
    default: return "none";
  }
}

double decodeMiniFloat(uint32_t bits, const MiniFloatFormat& f) {
  const uint32_t expMask = (1u << f.expBits) - 1, manMask = (1u << f.manBits) - 1;
  const bool negative = (bits >> (f.expBits + f.manBits)) & 1;
  const uint32_t e = (bits >> f.manBits) & expMask, m = bits & manMask;
  double v;
  if (f.ieeeSpecials && e == expMask) {
    v = m ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (!f.ieeeSpecials && e == expMask && m == manMask) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (e == 0) {
    v = std::ldexp(static_cast<double>(m), 1 - f.bias - f.manBits);
  } else {
    v = std::ldexp(static_cast<double>(m | (1u << f.manBits)), static_cast<int>(e) - f.bias - f.manBits);
  }
  return negative ? -v : v;
}

uint32_t encodeMiniFloat(double value, const MiniFloatFormat& f) {
  const uint32_t expMask = (1u << f.expBits) - 1, manMask = (1u << f.manBits) - 1;
  const uint32_t signBit = 1u << (f.expBits + f.manBits);
  const uint32_t sign = std::signbit(value) ? signBit : 0;
  // Largest finite encoding and the overflow encoding.
  const uint32_t maxFinite =
      f.ieeeSpecials ? ((expMask - 1) << f.manBits) | manMask : (expMask << f.manBits) | (manMask - 1);
  const uint32_t overflow = f.ieeeSpecials ? expMask << f.manBits : maxFinite;  // inf / saturate
  if (std::isnan(value))
    return f.ieeeSpecials ? (expMask << f.manBits) | (1u << (f.manBits - 1)) : (expMask << f.manBits) | manMask;
  const double a = std::fabs(value);
  if (std::isinf(a)) return sign | overflow;
  if (a == 0) return sign;
  int ex;
  std::frexp(a, &ex);                                 // a = fr * 2^ex, fr in [0.5, 1)
  const int unbiased = std::max(ex - 1, 1 - f.bias);  // subnormals share the minimum exponent
  if (unbiased - f.bias > 64) return sign | overflow;
  const double q = std::nearbyint(std::ldexp(a, f.manBits - unbiased));  // ties to even
  const uint64_t mant = static_cast<uint64_t>(q);
  uint64_t bits;
  if (unbiased == 1 - f.bias && mant < (1u << f.manBits)) {
    bits = mant;  // subnormal (or zero after rounding)
  } else {
    // A mantissa that rounded up to 2^(manBits+1) carries into the exponent field by itself.
    bits = (static_cast<uint64_t>(unbiased + f.bias) << f.manBits) + (mant - (1u << f.manBits));
  }
  if (bits > maxFinite) return sign | overflow;
  return sign | static_cast<uint32_t>(bits);
}

double loadElement(const void* buffer, size_t index, ncclDataType_t type) {
  switch (type) {
    case ncclInt8: return loadAs<int8_t>(buffer, index);
    case ncclUint8: return loadAs<uint8_t>(buffer, index);
    case ncclInt32: return loadAs<int32_t>(buffer, index);
    case ncclUint32: return loadAs<uint32_t>(buffer, index);
    case ncclInt64: return static_cast<double>(loadAs<int64_t>(buffer, index));
    case ncclUint64: return static_cast<double>(loadAs<uint64_t>(buffer, index));
    case ncclFloat16: return decodeMiniFloat(loadAs<uint16_t>(buffer, index), kHalfFormat);
    case ncclFloat32: return loadAs<float>(buffer, index);
    case ncclFloat64: return loadAs<double>(buffer, index);
    case ncclBfloat16: return decodeMiniFloat(loadAs<uint16_t>(buffer, index), kBfloat16Format);
    case ncclFloat8e4m3: return decodeMiniFloat(loadAs<uint8_t>(buffer, index), kE4m3Format);
    case ncclFloat8e5m2: return decodeMiniFloat(loadAs<uint8_t>(buffer, index), kE5m2Format);
    default: return std::numeric_limits<double>::quiet_NaN();
  }
}

void storeElement(void* buffer, size_t index, ncclDataType_t type, double v) {
  switch (type) {
    case ncclInt8: storeAs(buffer, index, toInteger<int8_t>(v)); break;
    case ncclUint8: storeAs(buffer, index, toInteger<uint8_t>(v)); break;
    case ncclInt32: storeAs(buffer, index, toInteger<int32_t>(v)); break;
    case ncclUint32: storeAs(buffer, index, toInteger<uint32_t>(v)); break;
    case ncclInt64: storeAs(buffer, index, toInteger<int64_t>(v)); break;
    case ncclUint64: storeAs(buffer, index, toInteger<uint64_t>(v)); break;
    case ncclFloat16: storeAs(buffer, index, static_cast<uint16_t>(encodeMiniFloat(v, kHalfFormat))); break;
    case ncclFloat32: storeAs(buffer, index, static_cast<float>(v)); break;
    case ncclFloat64: storeAs(buffer, index, v); break;
    case ncclBfloat16: storeAs(buffer, index, static_cast<uint16_t>(encodeMiniFloat(v, kBfloat16Format))); break;
    case ncclFloat8e4m3: storeAs(buffer, index, static_cast<uint8_t>(encodeMiniFloat(v, kE4m3Format))); break;
    case ncclFloat8e5m2: storeAs(buffer, index, static_cast<uint8_t>(encodeMiniFloat(v, kE5m2Format))); break;
    default: break;
  }
}

double roundToType(double value, ncclDataType_t type) {
  unsigned char tmp[8];
  storeElement(tmp, 0, type, value);
  return loadElement(tmp, 0, type);
}

void poisonBuffer(void* buffer, size_t count, ncclDataType_t type) {
  const TypeInfo& t = typeInfo(type);
  if (t.isFloat || !t.isSigned) {
    std::memset(buffer, 0xff, count * t.size);  // NaN in every float format; max for unsigned
    return;
  }
  for (size_t i = 0; i < count; ++i) storeElement(buffer, i, type, -1e300);  // saturates to min
}

void fillNormal(void* buffer, size_t count, ncclDataType_t type, uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  if (type == ncclFloat32) {
    auto* out = static_cast<float*>(buffer);
    for (size_t i = 0; i < count; ++i) out[i] = normal(engine);
    return;
  }
  for (size_t i = 0; i < count; ++i) storeElement(buffer, i, type, normal(engine));
}

DataGen::DataGen(ncclDataType_t type, int op, int nranks, uint64_t seed)
    : type_(type), op_(op), nranks_(std::max(1, nranks)), seed_(seed), info_(&typeInfo(type)) {
  const int64_t n = nranks_;
  const int64_t exactMax = static_cast<int64_t>(info_->exactMax);
  auto sumScheme = [&] {
    // At most ceil(n / stride) ranks contribute to an element; their total stays within exactMax.
    scheme_ = Scheme::kSum;
    stride_ = std::max<int64_t>(1, ceilDiv(n, exactMax));
    bound_ = std::max<int64_t>(1, exactMax / ceilDiv(n, stride_));
  };
  switch (op) {
    case ncclSum: sumScheme(); break;
    case ncclAvg:
      // Pairs of ranks hold base+k and base-k, so the sum is exactly n*base and the average
      // is exact for integers too. Only fp8 with more ranks than exactMax falls back to sums.
      if (exactMax / n >= 1) {
        scheme_ = Scheme::kAvgPairs;
        bound_ = exactMax / n;
      } else {
        sumScheme();
      }
      break;
    case ncclProd:
      // Factors are +-1 or 2, with at most maxPow2 twos per element.
      scheme_ = Scheme::kProd;
      stride_ = std::max<int64_t>(1, ceilDiv(n, info_->maxPow2));
      break;
    default:  // max, min, copies
      scheme_ = Scheme::kRange;
      bound_ = exactMax;
      break;
  }
}

uint64_t DataGen::hash(int rank, size_t index) const {
  return splitmix64(seed_ * 0x9e3779b97f4a7c15ULL ^
                    splitmix64(static_cast<uint64_t>(index) * 0x100000001b3ULL + static_cast<uint64_t>(rank + 1)));
}

double DataGen::input(int rank, size_t index) const {
  const bool isSigned = info_->isSigned;
  switch (scheme_) {
    case Scheme::kSum: {
      if ((static_cast<int64_t>(rank) + static_cast<int64_t>(index % stride_)) % stride_ != 0) return 0;
      uint64_t h = hash(rank, index);
      uint64_t b = static_cast<uint64_t>(bound_);
      return isSigned ? static_cast<double>(static_cast<int64_t>(h % (2 * b + 1)) - bound_)
                      : static_cast<double>(h % (b + 1));
    }
    case Scheme::kAvgPairs: {
      uint64_t h = hash(-1, index);  // shared by all ranks
      int64_t base = static_cast<int64_t>(h % static_cast<uint64_t>(bound_ / 2 + 1));
      if (isSigned && ((h >> 33) & 1)) base = -base;
      int64_t kmax = isSigned ? bound_ - std::llabs(base) : std::min(base, bound_ - base);
      int64_t k = static_cast<int64_t>((h >> 40) % static_cast<uint64_t>(kmax + 1));
      if (rank % 2 == 1) return static_cast<double>(base - k);
      if (rank + 1 < nranks_) return static_cast<double>(base + k);
      return static_cast<double>(base);  // odd rank count: the last rank has no partner
    }
    case Scheme::kProd: {
      uint64_t h = hash(rank, index);
      bool two = (static_cast<int64_t>(rank) + static_cast<int64_t>(index % stride_)) % stride_ == 0 && (h & 1);
      bool negative = isSigned && ((h >> 1) & 3) == 0;
      return (two ? 2.0 : 1.0) * (negative ? -1.0 : 1.0);
    }
    case Scheme::kRange:
    default: {
      uint64_t h = hash(rank, index);
      uint64_t b = static_cast<uint64_t>(bound_);
      return isSigned ? static_cast<double>(static_cast<int64_t>(h % (2 * b + 1)) - bound_)
                      : static_cast<double>(h % (b + 1));
    }
  }
}

ExpectedValue DataGen::reduced(size_t index) const {
  const TypeInfo& t = *info_;
  double acc = input(0, index), sumAbs = std::fabs(acc);
  for (int r = 1; r < nranks_; ++r) {
    double x = input(r, index);
    sumAbs += std::fabs(x);
    switch (op_) {
      case ncclProd: acc *= x; break;
      case ncclMax: acc = std::max(acc, x); break;
      case ncclMin: acc = std::min(acc, x); break;
      default: acc += x; break;  // sum, avg
    }
  }
  if (op_ != ncclAvg) return {acc, t.isFloat ? t.eps * std::fabs(acc) : 0.0};
  double avg = acc / nranks_;
  if (!t.isFloat) return {std::trunc(avg), 0.0};  // exact: the pairs make the sum divisible
  // An implementation may divide each input first (premultiply) or the sum at the end; with
  // premultiplied inputs each of the n additions may round, by up to eps/2 of a partial sum.
  return {avg, t.eps * (nranks_ + 2) * (sumAbs / nranks_ + std::fabs(avg)) + nranks_ * t.minSubnormal};
}

bool DataGen::matches(double got, const ExpectedValue& want) const {
  if (std::isnan(got)) return false;
  return std::fabs(got - want.value) <= want.tolerance;
}

void DataGen::fill(void* buffer, size_t count, int rank, size_t firstIndex) const {
  for (size_t k = 0; k < count; ++k) storeElement(buffer, k, type_, input(rank, firstIndex + k));
}

}  // namespace weft::perf
