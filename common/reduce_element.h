// The element-wise arithmetic of the reduction kernels: how each ncclDataType_t is stored and
// in which type it is computed (codecs), and the four operators. Shared by the CPU kernels
// (reduce.cc, where the operators also take GCC vector types) and the CUDA kernels
// (cuda/reduce.cu), so that both compute the same bits: see reduce.h for the rules.
#pragma once

#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>

#include "common/host_device.h"
#include "common/numeric.h"
#include "nccl.h"

namespace weft::elementwise {

// ---- Operators, written once for scalars and for GCC vector types (__m256, __m512) ----

// Integer arithmetic goes through the unsigned type: wraps without undefined behaviour.
template <class T, class = void>
struct Wrap {
  using type = T;
};
template <class T>
struct Wrap<T, std::enable_if_t<std::is_integral_v<T>>> {
  using type = std::make_unsigned_t<T>;
};
template <class T>
using WrapType = typename Wrap<T>::type;

struct SumOp {
  template <class T>
  WEFT_FORCE_INLINE WEFT_HOST_DEVICE static T apply(const T& a, const T& b) {
    return static_cast<T>(static_cast<WrapType<T>>(a) + static_cast<WrapType<T>>(b));
  }
};
struct ProdOp {
  template <class T>
  WEFT_FORCE_INLINE WEFT_HOST_DEVICE static T apply(const T& a, const T& b) {
    return static_cast<T>(static_cast<WrapType<T>>(a) * static_cast<WrapType<T>>(b));
  }
};
// `a != a` is the NaN test (always false, and folded away, for integers).
struct MaxOp {
  template <class T>
  WEFT_FORCE_INLINE WEFT_HOST_DEVICE static T apply(const T& a, const T& b) {
    return (a > b || a != a) ? a : b;
  }
};
struct MinOp {
  template <class T>
  WEFT_FORCE_INLINE WEFT_HOST_DEVICE static T apply(const T& a, const T& b) {
    return (a < b || a != a) ? a : b;
  }
};

// ---- Codecs: how an element of each type is stored and in which type it is computed ----
// Always inlined: the CPU loops vectorize only when the conversions are inlined into them, and
// GCC's size heuristics would otherwise leave one of the fp8 types scalar.

template <class T>
struct Plain {
  using Storage = T;
  using Compute = T;
  WEFT_FORCE_INLINE WEFT_HOST_DEVICE static T load(T v) { return v; }
  WEFT_FORCE_INLINE WEFT_HOST_DEVICE static T store(T v) { return v; }
};
struct Half {
  using Storage = uint16_t;
  using Compute = float;
  WEFT_FORCE_INLINE WEFT_HOST_DEVICE static float load(uint16_t v) { return halfToFloat(v); }
  WEFT_FORCE_INLINE WEFT_HOST_DEVICE static uint16_t store(float v) { return floatToHalf(v); }
};
struct Bfloat16 {
  using Storage = uint16_t;
  using Compute = float;
  WEFT_FORCE_INLINE WEFT_HOST_DEVICE static float load(uint16_t v) { return bfloat16ToFloat(v); }
  WEFT_FORCE_INLINE WEFT_HOST_DEVICE static uint16_t store(float v) { return floatToBfloat16(v); }
};
struct Fp8e4m3 {
  using Storage = uint8_t;
  using Compute = float;
  WEFT_FORCE_INLINE WEFT_HOST_DEVICE static float load(uint8_t v) { return fp8e4m3ToFloat(v); }
  WEFT_FORCE_INLINE WEFT_HOST_DEVICE static uint8_t store(float v) { return floatToFp8e4m3(v); }
};
struct Fp8e5m2 {
  using Storage = uint8_t;
  using Compute = float;
  WEFT_FORCE_INLINE WEFT_HOST_DEVICE static float load(uint8_t v) { return fp8e5m2ToFloat(v); }
  WEFT_FORCE_INLINE WEFT_HOST_DEVICE static uint8_t store(float v) { return floatToFp8e5m2(v); }
};

// Indexed by ncclDataType_t.
using Codecs = std::tuple<Plain<int8_t>, Plain<uint8_t>, Plain<int32_t>, Plain<uint32_t>, Plain<int64_t>,
                          Plain<uint64_t>, Half, Plain<float>, Plain<double>, Bfloat16, Fp8e4m3, Fp8e5m2>;
static_assert(std::tuple_size_v<Codecs> == ncclNumTypes);

// ---- One element: the body of reduce.cc's loops and of the CUDA kernels ----

template <class C, class Op>
WEFT_FORCE_INLINE WEFT_HOST_DEVICE typename C::Storage reduceElement(typename C::Storage a, typename C::Storage b) {
  return C::store(Op::apply(C::load(a), C::load(b)));
}

// src * factor for PreMulSum, the factor already loaded (C::load of the scalar).
template <class C>
WEFT_FORCE_INLINE WEFT_HOST_DEVICE typename C::Storage scaleElement(typename C::Storage src,
                                                                    typename C::Compute factor) {
  return C::store(ProdOp::apply(C::load(src), factor));
}

// src / divisor for ncclAvg (reduce.h's divideBuffer rules; divisor >= 1). Integer types divide
// truncating toward zero; reduce.cc gets the same quotients through double, which vectorizes.
template <class C>
WEFT_HOST_DEVICE inline typename C::Storage divideElement(typename C::Storage src, uint64_t divisor) {
  using S = typename C::Storage;
  using Compute = typename C::Compute;
  if constexpr (!std::is_integral_v<Compute>) {
    return C::store(C::load(src) / static_cast<Compute>(divisor));
  } else if constexpr (std::is_signed_v<S>) {
    // Up to 32 bits with a divisor that fits, 32-bit division: a GPU emulates 64-bit division.
    if constexpr (sizeof(S) <= 4)
      if (divisor <= static_cast<uint64_t>(INT32_MAX))
        return static_cast<S>(static_cast<int32_t>(src) / static_cast<int32_t>(divisor));
    const int64_t value = static_cast<int64_t>(src);
    if (divisor > static_cast<uint64_t>(INT64_MAX))  // |quotient| < 1 except -2^63 / 2^63
      return static_cast<S>((value == INT64_MIN && divisor == (uint64_t{1} << 63)) ? -1 : 0);
    return static_cast<S>(value / static_cast<int64_t>(divisor));
  } else {
    if constexpr (sizeof(S) <= 4)
      if (divisor <= UINT32_MAX) return static_cast<S>(static_cast<uint32_t>(src) / static_cast<uint32_t>(divisor));
    return static_cast<S>(static_cast<uint64_t>(src) / divisor);
  }
}

}  // namespace weft::elementwise
