// Scalar conversions between float and the narrow floating formats NCCL carries (IEEE
// binary16, bfloat16, OCP fp8 E4M3FN and E5M2), plus element access by ncclDataType_t.
//
// All float -> narrow conversions round to nearest, ties to even. The conversions are written
// without data-dependent branches (selects only), so loops over them auto-vectorize; the
// reduction kernels rely on that for bfloat16 and for half on CPUs without F16C. They are
// host-and-device functions: the CUDA kernels (common/cuda, compression/cuda) use these same
// definitions, so device and host round identically.
#pragma once

#include <cstdint>
#include <cstring>
#if !defined(__CUDACC__)
#include <bit>
#endif

#include "common/host_device.h"
#include "nccl.h"

namespace weft {

namespace numeric_detail {
// The device has its own instructions. The host code of a .cu file is C++17 (nvcc), so it has
// no std::bit_cast; everywhere else std::bit_cast, which GCC vectorizes best in the CPU loops.
WEFT_HOST_DEVICE inline float bitsToFloat(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#elif defined(__CUDACC__)
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
#else
  return std::bit_cast<float>(bits);
#endif
}
WEFT_HOST_DEVICE inline uint32_t floatToBits(float value) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(value);
#elif defined(__CUDACC__)
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
#else
  return std::bit_cast<uint32_t>(value);
#endif
}
// condition ? a : b without a branch. Written with masks so that GCC keeps the float operations
// feeding `a` and `b` unconditional: with a ternary it moves them into a branch, and under the
// default -ftrapping-math it may then not if-convert (and vectorize) the loop.
WEFT_HOST_DEVICE inline uint32_t select(bool condition, uint32_t a, uint32_t b) {
  return b ^ ((a ^ b) & (0u - static_cast<uint32_t>(condition)));
}
}  // namespace numeric_detail

// ---- IEEE binary16 ----

WEFT_FORCE_INLINE WEFT_HOST_DEVICE float halfToFloat(uint16_t h) {
  using namespace numeric_detail;
  // Move exponent and mantissa into float position and rebias; then fix up the two special
  // exponents (after F. Giesen's half_to_float_fast).
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t bits = static_cast<uint32_t>(h & 0x7fffu) << 13;
  uint32_t exponent = bits & 0x0f800000u;
  bits += (127u - 15u) << 23;
  float normal = bitsToFloat(bits);
  // Inf/NaN: exponent to 255; NaN gets the quiet bit set, as hardware conversions do.
  uint32_t special = bits + ((128u - 16u) << 23);
  special |= (special & 0x007fffffu) ? 0x00400000u : 0u;
  // Zero/subnormal: scale the mantissa by 2^-24 exactly through one float subtraction.
  float subnormal = bitsToFloat(bits + (1u << 23)) - bitsToFloat(113u << 23);
  uint32_t magnitude =
      select(exponent == 0x0f800000u, special, select(exponent == 0, floatToBits(subnormal), floatToBits(normal)));
  return bitsToFloat(magnitude | sign);
}

WEFT_FORCE_INLINE WEFT_HOST_DEVICE uint16_t floatToHalf(float value) {
  using namespace numeric_detail;
  uint32_t bits = floatToBits(value);
  uint32_t sign = (bits >> 16) & 0x8000u;
  uint32_t magnitude = bits & 0x7fffffffu;
  // NaN keeps the top of its payload and is made quiet; >= 65520 rounds to infinity.
  uint32_t nan = 0x7e00u | ((magnitude >> 13) & 0x3ffu);
  uint32_t overflow = magnitude > 0x7f800000u ? nan : 0x7c00u;
  // Below 2^-14 the result is subnormal: adding 0.5f puts the value's bits in units of 2^-24
  // at the bottom of the mantissa, and the float add does the round-to-nearest-even.
  uint32_t subnormal = floatToBits(bitsToFloat(magnitude) + 0.5f) - 0x3f000000u;
  // Normal: rebias, then add half an ulp (minus one, plus the kept lsb: ties to even).
  uint32_t lsb = (magnitude >> 13) & 1u;
  uint32_t normal = (magnitude + ((15u - 127u) << 23) + 0xfffu + lsb) >> 13;
  uint32_t result = select(magnitude >= 0x477ff000u, overflow, select(magnitude < 0x38800000u, subnormal, normal));
  return static_cast<uint16_t>(result | sign);
}

// ---- bfloat16 (the top half of a float) ----

WEFT_FORCE_INLINE WEFT_HOST_DEVICE float bfloat16ToFloat(uint16_t b) {
  return numeric_detail::bitsToFloat(static_cast<uint32_t>(b) << 16);
}

WEFT_FORCE_INLINE WEFT_HOST_DEVICE uint16_t floatToBfloat16(float value) {
  uint32_t bits = numeric_detail::floatToBits(value);
  uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  // Rounding would carry a NaN's payload into the exponent; keep it NaN and make it quiet.
  bool isNan = (bits & 0x7fffffffu) > 0x7f800000u;
  return static_cast<uint16_t>(isNan ? (bits >> 16) | 0x40u : rounded);
}

// ---- fp8 E4M3FN (OCP): bias 7, no infinity, S.1111.111 is NaN, max 448 ----

WEFT_FORCE_INLINE WEFT_HOST_DEVICE float fp8e4m3ToFloat(uint8_t v) {
  using namespace numeric_detail;
  uint32_t sign = static_cast<uint32_t>(v & 0x80u) << 24;
  uint32_t exponent = (v >> 3) & 0xfu;
  uint32_t mantissa = v & 0x7u;
  float subnormal = static_cast<float>(static_cast<int32_t>(mantissa)) * 0x1p-9f;
  uint32_t normal = ((exponent + 120u) << 23) | (mantissa << 20);
  uint32_t magnitude = select((v & 0x7fu) == 0x7fu, 0x7fc00000u, select(exponent == 0, floatToBits(subnormal), normal));
  return bitsToFloat(magnitude | sign);
}

// Saturating like CUDA's __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3): finite values
// and infinities beyond 448 become +-448; NaN becomes 0x7f (with the sign).
WEFT_FORCE_INLINE WEFT_HOST_DEVICE uint8_t floatToFp8e4m3(float value) {
  using namespace numeric_detail;
  uint32_t bits = floatToBits(value);
  uint32_t sign = (bits >> 24) & 0x80u;
  uint32_t magnitude = bits & 0x7fffffffu;
  // Below 2^-6: units of 2^-9, rounded by one float add (2^14 has an ulp of 2^-9).
  uint32_t subnormal = floatToBits(bitsToFloat(magnitude) + 0x1p14f) - floatToBits(0x1p14f);
  uint32_t lsb = (magnitude >> 20) & 1u;
  uint32_t normal = (magnitude + ((7u - 127u) << 23) + 0x7ffffu + lsb) >> 20;
  uint32_t result = select(magnitude > 0x7f800000u, 0x7fu,
                           select(magnitude > 0x43e00000u, 0x7eu,  // > 448
                                  select(magnitude < 0x3c800000u, subnormal, normal)));
  return static_cast<uint8_t>(result | sign);
}

// ---- fp8 E5M2: the top byte of a binary16 (bias 15, with infinity and NaN) ----

WEFT_FORCE_INLINE WEFT_HOST_DEVICE float fp8e5m2ToFloat(uint8_t v) {
  return halfToFloat(static_cast<uint16_t>(v << 8));
}

// Not saturating (__NV_NOSAT): >= 61440 rounds to infinity; NaN stays a quiet NaN.
WEFT_FORCE_INLINE WEFT_HOST_DEVICE uint8_t floatToFp8e5m2(float value) {
  using namespace numeric_detail;
  uint32_t bits = floatToBits(value);
  uint32_t sign = (bits >> 24) & 0x80u;
  uint32_t magnitude = bits & 0x7fffffffu;
  // Below 2^-14: units of 2^-16, rounded by one float add (128 has an ulp of 2^-16).
  uint32_t subnormal = floatToBits(bitsToFloat(magnitude) + 128.0f) - floatToBits(128.0f);
  uint32_t lsb = (magnitude >> 21) & 1u;
  uint32_t normal = (magnitude + ((15u - 127u) << 23) + 0xfffffu + lsb) >> 21;
  uint32_t overflow = magnitude > 0x7f800000u ? 0x7eu | ((magnitude >> 21) & 1u) : 0x7cu;
  uint32_t result = select(magnitude >= 0x47700000u, overflow,  // >= 61440
                           select(magnitude < 0x38800000u, subnormal, normal));
  return static_cast<uint8_t>(result | sign);
}

// ---- Element access by type (tests, checkers, scalar arguments; not for hot loops) ----

// The value of the element at `element` (exact for every type but 64-bit integers beyond 2^53).
double toDouble(const void* element, ncclDataType_t type);
// Stores `value` as one element of `type`, rounded once to nearest-even (floating types) or
// converted like a C cast (integer types; out-of-range values wrap modulo 2^bits).
void fromDouble(double value, void* element, ncclDataType_t type);

// double -> float rounding to odd: exact when representable, else the neighbour with an odd
// last bit. Rounding that float again to any format with at most 22 significant bits gives the
// correctly rounded result of the double, so narrow conversions from double round only once.
float doubleToFloatRoundToOdd(double value);

}  // namespace weft
