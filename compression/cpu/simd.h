// Portable SIMD for the codec kernels: GCC vector extensions, instantiated at a vector width
// per instruction set and picked at run time.
//
// A kernel is written once as an always-inline template over the lane count W. The macro
// WEFT_CODEC_DISPATCH compiles it three times, inside functions built for AVX-512
// (W = 16), AVX2 (W = 8) and the baseline (W = 4: SSE2 on x86-64, the generic lowering
// elsewhere), and defines a function that calls the variant activeIsa() names. Only the
// instruction set changes between variants, never the arithmetic: every variant produces
// the same bytes (the unit tests check it), because the layer is compiled with
// -ffp-contract=off and no kernel uses an operation whose result depends on the width.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace weft::compression {

enum class Isa : uint8_t { kPortable = 0, kAvx2 = 1, kAvx512 = 2 };

// The instruction set the kernels use: the best one the CPU has, or the one forced.
Isa activeIsa();
// The best one this CPU supports.
Isa detectedIsa();
// For tests and benchmarks: run the kernels of `isa` (clamped to what the CPU supports);
// returns the one in effect. Not thread-safe against concurrently running kernels.
Isa forceIsa(Isa isa);
const char* isaName(Isa isa);

namespace simd {

template <int W>
struct V {
  typedef float F __attribute__((vector_size(W * 4)));
  typedef int32_t I __attribute__((vector_size(W * 4)));
  typedef uint32_t U __attribute__((vector_size(W * 4)));
  typedef uint16_t H __attribute__((vector_size(W * 2)));
  typedef int16_t S __attribute__((vector_size(W * 2)));
  typedef int8_t B __attribute__((vector_size(W)));
  typedef uint8_t UB __attribute__((vector_size(W)));
};

// Unaligned, aliasing-safe access (plain memcpy of a small vector sometimes goes through
// general registers; a dereference of an under-aligned may_alias type does not).
template <typename T>
struct Unaligned {
  typedef T type __attribute__((may_alias, aligned(1)));
};

template <typename T, typename E>
__attribute__((always_inline)) inline T load(const E* p) {
  return *reinterpret_cast<const typename Unaligned<T>::type*>(p);
}
template <typename T, typename E>
__attribute__((always_inline)) inline void store(E* p, const T& v) {
  *reinterpret_cast<typename Unaligned<T>::type*>(p) = v;
}
// int8 -> float lanes. Through int16: GCC 12 lowers a direct int8 -> int32 conversion to
// scalar code, but each doubling to vpmovsx.
template <int W>
__attribute__((always_inline)) inline typename V<W>::F widenToFloat(typename V<W>::B b) {
  return __builtin_convertvector(
      __builtin_convertvector(__builtin_convertvector(b, typename V<W>::S), typename V<W>::I), typename V<W>::F);
}

template <typename T>
__attribute__((always_inline)) inline T iota() {
  T v;
  for (int j = 0; j < static_cast<int>(sizeof(T) / sizeof(v[0])); ++j) v[j] = j;
  return v;
}

}  // namespace simd

#define WEFT_CODEC_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,bmi,bmi2,popcnt")))
#define WEFT_CODEC_TARGET_AVX2 __attribute__((target("avx2,bmi,bmi2,popcnt")))

// Defines `static ret name params` dispatching to body<16>, body<8> or body<4> args.
#define WEFT_CODEC_DISPATCH(ret, name, body, params, args)                          \
  WEFT_CODEC_TARGET_AVX512 static ret name##Avx512 params { return body<16> args; } \
  WEFT_CODEC_TARGET_AVX2 static ret name##Avx2 params { return body<8> args; }      \
  static ret name##Portable params { return body<4> args; }                         \
  [[maybe_unused]] static ret name params {                                         \
    switch (::weft::compression::activeIsa()) {                                     \
      case ::weft::compression::Isa::kAvx512: return name##Avx512 args;             \
      case ::weft::compression::Isa::kAvx2: return name##Avx2 args;                 \
      default: return name##Portable args;                                          \
    }                                                                               \
  }

}  // namespace weft::compression
