// Reduction kernels. Each (type, operation) is one typed loop, instantiated three times: for
// AVX-512, for AVX2+F16C and portably (the `target` attribute on the entry templates lets the
// compiler vectorize the same loop for each instruction set). The loops are plain element-wise
// C++ that GCC auto-vectorizes; only half on F16C needs intrinsics, because GCC does not
// vectorize float <-> half conversions without AVX512-FP16. A table of function pointers per
// instruction set, picked once, makes a call one indexed indirect call: no per-element switch
// and no setup, so tiny reductions stay cheap.
#include "common/reduce.h"

// The operator functors (reduce_element.h) take and return __m256/__m512 by value; they are
// always inlined into code of the matching instruction set, so the ABI note GCC gives for them
// does not apply. Before the includes: GCC places the note at the functors' definitions.
#pragma GCC diagnostic ignored "-Wpsabi"

#include <atomic>
#include <cstring>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "common/cpu_features.h"
#include "common/log.h"
#include "common/numeric.h"
#include "common/reduce_element.h"
#include "common/streaming_copy.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define WEFT_X86 1
#define WEFT_TARGET_AVX2 gnu::target("avx2,fma,f16c,bmi,bmi2")
#define WEFT_TARGET_AVX512 \
  gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c,bmi,bmi2,prefer-vector-width=512")
#else
#define WEFT_X86 0
#endif

// GCC 12 reports the deliberately undefined vector inside _mm512_cvtph_ps as uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace weft {

namespace {

using namespace elementwise;  // the operators and codecs, shared with the CUDA kernels

// ---- The loops (inlined into each instruction-set entry point below) ----
// `ivdep`: dst may equal a source, but element i is only read before element i is written,
// so there is no loop-carried dependence; without it GCC adds a run-time overlap check that
// sends dst == a down the scalar path.

template <class C, class Op>
[[gnu::always_inline]] inline void reduceLoop(void* dst, const void* a, const void* b, size_t n) {
  using S = typename C::Storage;
  S* d = static_cast<S*>(dst);
  const S* x = static_cast<const S*>(a);
  const S* y = static_cast<const S*>(b);
#pragma GCC ivdep
  for (size_t i = 0; i < n; i++) d[i] = reduceElement<C, Op>(x[i], y[i]);
}

template <class C>
[[gnu::always_inline]] inline void scaleLoop(void* dst, const void* src, size_t n, const void* scalar) {
  using S = typename C::Storage;
  S raw;
  std::memcpy(&raw, scalar, sizeof(S));
  const typename C::Compute factor = C::load(raw);
  S* d = static_cast<S*>(dst);
  const S* s = static_cast<const S*>(src);
#pragma GCC ivdep
  for (size_t i = 0; i < n; i++) d[i] = scaleElement<C>(s[i], factor);
}

template <class C>
[[gnu::always_inline]] inline void divideLoop(void* dst, const void* src, size_t n, uint64_t divisor) {
  using S = typename C::Storage;
  using Compute = typename C::Compute;
  S* d = static_cast<S*>(dst);
  const S* s = static_cast<const S*>(src);
  if constexpr (!std::is_integral_v<Compute>) {
    const Compute q = static_cast<Compute>(divisor);
#pragma GCC ivdep
    for (size_t i = 0; i < n; i++) d[i] = C::store(C::load(s[i]) / q);
  } else if constexpr (sizeof(S) <= 4) {
    // Up to 32 bits, divide in double: both operands are exact and the quotient's error is far
    // below the distance to the next integer (>= 1/divisor), so truncating it is exact. Unlike
    // integer division this vectorizes. The quotient fits in int32 except for uint32 (int64, which
    // AVX2 cannot convert in vectors).
    using Quotient = std::conditional_t<std::is_same_v<S, uint32_t>, int64_t, int32_t>;
    const double q = static_cast<double>(divisor);
#pragma GCC ivdep
    for (size_t i = 0; i < n; i++) d[i] = static_cast<S>(static_cast<Quotient>(static_cast<double>(s[i]) / q));
  } else if constexpr (std::is_signed_v<S>) {
    if (divisor > static_cast<uint64_t>(INT64_MAX)) {  // |quotient| < 1 except -2^63 / 2^63
      for (size_t i = 0; i < n; i++) d[i] = (s[i] == INT64_MIN && divisor == (1ull << 63)) ? -1 : 0;
      return;
    }
    const int64_t q = static_cast<int64_t>(divisor);
    for (size_t i = 0; i < n; i++) d[i] = s[i] / q;
  } else {
    for (size_t i = 0; i < n; i++) d[i] = s[i] / divisor;
  }
}

#if WEFT_X86
// ---- half on F16C: 8 (AVX2) or 16 (AVX-512) elements per conversion instruction ----
// The tails use the portable conversions, which round identically.

constexpr int kRoundNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

// dst[i] = f(a[i], b[i]) in float.
template <class F>
[[WEFT_TARGET_AVX2, gnu::always_inline]] inline void halfBinaryAvx2(uint16_t* d, const uint16_t* a, const uint16_t* b,
                                                                    size_t n, F f) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
    __m256 y = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), _mm256_cvtps_ph(f(x, y), kRoundNearest));
  }
  for (; i < n; i++) d[i] = floatToHalf(f(halfToFloat(a[i]), halfToFloat(b[i])));
}

template <class F>
[[WEFT_TARGET_AVX512, gnu::always_inline]] inline void halfBinaryAvx512(uint16_t* d, const uint16_t* a,
                                                                        const uint16_t* b, size_t n, F f) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 x = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i)));
    __m512 y = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), _mm512_cvtps_ph(f(x, y), kRoundNearest));
  }
  for (; i < n; i++) d[i] = floatToHalf(f(halfToFloat(a[i]), halfToFloat(b[i])));
}

// What the F16C loops compute, as functors that work on floats and on float vectors.
template <class Op>
struct Combine {
  template <class V>
  [[gnu::always_inline]] V operator()(const V& x, const V& y) const {
    return Op::apply(x, y);
  }
};
struct ScaleBy {
  float factor;
  template <class V>
  [[gnu::always_inline]] V operator()(const V& x, const V&) const {
    return x * factor;
  }
};
struct DivideBy {
  float divisor;
  template <class V>
  [[gnu::always_inline]] V operator()(const V& x, const V&) const {
    return x / divisor;
  }
};

inline uint16_t* halfs(void* p) { return static_cast<uint16_t*>(p); }
inline const uint16_t* halfs(const void* p) { return static_cast<const uint16_t*>(p); }
inline float halfScalar(const void* p) {
  uint16_t raw;
  std::memcpy(&raw, p, sizeof(raw));
  return halfToFloat(raw);
}
#endif

// ---- Entry points, one set per instruction set ----

using ReduceFn = void (*)(void*, const void*, const void*, size_t);
using ScaleFn = void (*)(void*, const void*, size_t, const void*);
using DivideFn = void (*)(void*, const void*, size_t, uint64_t);
using ReduceTwoFn = void (*)(void*, void*, const void*, const void*, size_t);

// Streaming reductions into two destinations go line by line: each 64-byte line of the result is
// reduced into a tile and stored to both destinations before the next line is read, so loads
// and non-temporal stores interleave closely. On this project's VM that beat 1 KiB tiles by
// 9-17% alone (bench_reduce's BM_ReduceToTwo) and by up to 48%, never behind, in the 2-rank
// all-reduce out of place at 128-256 MiB (docs/performance.md). Each instruction set writes the
// loop itself: its stores need the set's target attribute, which a shared template or lambda
// would not carry (GCC then refuses to inline the intrinsics).

struct PortableIsa {
  template <class C, class Op>
  static void reduce(void* d, const void* a, const void* b, size_t n) {
    reduceLoop<C, Op>(d, a, b, n);
  }
  template <class C>
  static void scale(void* d, const void* s, size_t n, const void* f) {
    scaleLoop<C>(d, s, n, f);
  }
  template <class C>
  static void divide(void* d, const void* s, size_t n, uint64_t q) {
    divideLoop<C>(d, s, n, q);
  }
  // No non-temporal stores here: reduce, then copy.
  template <class C, class Op>
  static void reduceTwo(void* d, void* d2, const void* a, const void* b, size_t lines) {
    const size_t n = lines * kReduceLineBytes / sizeof(typename C::Storage);
    reduceLoop<C, Op>(d, a, b, n);
    std::memcpy(d2, d, lines * kReduceLineBytes);
  }
};

#if WEFT_X86
// Scale and divide pass the source twice to the binary half loop; the second load hits L1.
struct Avx2Isa {
  template <class C, class Op>
  [[WEFT_TARGET_AVX2, gnu::always_inline]] static inline void reduce(void* d, const void* a, const void* b, size_t n) {
    if constexpr (std::is_same_v<C, Half>)
      halfBinaryAvx2(halfs(d), halfs(a), halfs(b), n, Combine<Op>{});
    else
      reduceLoop<C, Op>(d, a, b, n);
  }
  template <class C>
  [[WEFT_TARGET_AVX2]] static void scale(void* d, const void* s, size_t n, const void* f) {
    if constexpr (std::is_same_v<C, Half>)
      halfBinaryAvx2(halfs(d), halfs(s), halfs(s), n, ScaleBy{halfScalar(f)});
    else
      scaleLoop<C>(d, s, n, f);
  }
  template <class C>
  [[WEFT_TARGET_AVX2]] static void divide(void* d, const void* s, size_t n, uint64_t q) {
    if constexpr (std::is_same_v<C, Half>)
      halfBinaryAvx2(halfs(d), halfs(s), halfs(s), n, DivideBy{static_cast<float>(q)});
    else
      divideLoop<C>(d, s, n, q);
  }
  template <class C, class Op>
  [[WEFT_TARGET_AVX2]] static void reduceTwo(void* d, void* d2, const void* a, const void* b, size_t lines) {
    constexpr size_t perLine = kReduceLineBytes / sizeof(typename C::Storage);
    for (size_t at = 0; at < lines * kReduceLineBytes; at += kReduceLineBytes) {
      prefetchStorePageAhead(static_cast<char*>(d) + at, kReduceLineBytes);
      prefetchStorePageAhead(static_cast<char*>(d2) + at, kReduceLineBytes);
      alignas(64) char tile[kReduceLineBytes];
      reduce<C, Op>(tile, static_cast<const char*>(a) + at, static_cast<const char*>(b) + at, perLine);
      const __m256i lo = _mm256_load_si256(reinterpret_cast<const __m256i*>(tile));
      const __m256i hi = _mm256_load_si256(reinterpret_cast<const __m256i*>(tile + 32));
      _mm256_stream_si256(reinterpret_cast<__m256i*>(static_cast<char*>(d) + at), lo);
      _mm256_stream_si256(reinterpret_cast<__m256i*>(static_cast<char*>(d) + at + 32), hi);
      _mm256_stream_si256(reinterpret_cast<__m256i*>(static_cast<char*>(d2) + at), lo);
      _mm256_stream_si256(reinterpret_cast<__m256i*>(static_cast<char*>(d2) + at + 32), hi);
    }
  }
};

struct Avx512Isa {
  template <class C, class Op>
  [[WEFT_TARGET_AVX512, gnu::always_inline]] static inline void reduce(void* d, const void* a, const void* b,
                                                                       size_t n) {
    if constexpr (std::is_same_v<C, Half>)
      halfBinaryAvx512(halfs(d), halfs(a), halfs(b), n, Combine<Op>{});
    else
      reduceLoop<C, Op>(d, a, b, n);
  }
  template <class C>
  [[WEFT_TARGET_AVX512]] static void scale(void* d, const void* s, size_t n, const void* f) {
    if constexpr (std::is_same_v<C, Half>)
      halfBinaryAvx512(halfs(d), halfs(s), halfs(s), n, ScaleBy{halfScalar(f)});
    else
      scaleLoop<C>(d, s, n, f);
  }
  template <class C>
  [[WEFT_TARGET_AVX512]] static void divide(void* d, const void* s, size_t n, uint64_t q) {
    if constexpr (std::is_same_v<C, Half>)
      halfBinaryAvx512(halfs(d), halfs(s), halfs(s), n, DivideBy{static_cast<float>(q)});
    else
      divideLoop<C>(d, s, n, q);
  }
  template <class C, class Op>
  [[WEFT_TARGET_AVX512]] static void reduceTwo(void* d, void* d2, const void* a, const void* b, size_t lines) {
    constexpr size_t perLine = kReduceLineBytes / sizeof(typename C::Storage);
    for (size_t at = 0; at < lines * kReduceLineBytes; at += kReduceLineBytes) {
      prefetchStorePageAhead(static_cast<char*>(d) + at, kReduceLineBytes);
      prefetchStorePageAhead(static_cast<char*>(d2) + at, kReduceLineBytes);
      alignas(64) char tile[kReduceLineBytes];
      reduce<C, Op>(tile, static_cast<const char*>(a) + at, static_cast<const char*>(b) + at, perLine);
      const __m512i line = _mm512_load_si512(tile);
      _mm512_stream_si512(reinterpret_cast<__m512i*>(static_cast<char*>(d) + at), line);
      _mm512_stream_si512(reinterpret_cast<__m512i*>(static_cast<char*>(d2) + at), line);
    }
  }
};
#endif

// ---- Dispatch tables ----

struct KernelTable {
  ReduceFn reduce[ncclNumTypes][4];        // [type][ReduceOp]
  ReduceTwoFn reduceTwo[ncclNumTypes][4];  // [type][ReduceOp], whole lines
  ScaleFn scale[ncclNumTypes];
  DivideFn divide[ncclNumTypes];
};

template <class Isa, size_t... I>
constexpr KernelTable makeTable(std::index_sequence<I...>) {
  KernelTable t{};
  ((t.reduce[I][0] = &Isa::template reduce<std::tuple_element_t<I, Codecs>, SumOp>,
    t.reduce[I][1] = &Isa::template reduce<std::tuple_element_t<I, Codecs>, ProdOp>,
    t.reduce[I][2] = &Isa::template reduce<std::tuple_element_t<I, Codecs>, MaxOp>,
    t.reduce[I][3] = &Isa::template reduce<std::tuple_element_t<I, Codecs>, MinOp>,
    t.reduceTwo[I][0] = &Isa::template reduceTwo<std::tuple_element_t<I, Codecs>, SumOp>,
    t.reduceTwo[I][1] = &Isa::template reduceTwo<std::tuple_element_t<I, Codecs>, ProdOp>,
    t.reduceTwo[I][2] = &Isa::template reduceTwo<std::tuple_element_t<I, Codecs>, MaxOp>,
    t.reduceTwo[I][3] = &Isa::template reduceTwo<std::tuple_element_t<I, Codecs>, MinOp>,
    t.scale[I] = &Isa::template scale<std::tuple_element_t<I, Codecs>>,
    t.divide[I] = &Isa::template divide<std::tuple_element_t<I, Codecs>>),
   ...);
  return t;
}

template <class Isa>
constexpr KernelTable kTable = makeTable<Isa>(std::make_index_sequence<ncclNumTypes>());

const KernelTable* tableFor(KernelIsa isa) {
  switch (isa) {
#if WEFT_X86
    case KernelIsa::Avx512: return &kTable<Avx512Isa>;
    case KernelIsa::Avx2: return &kTable<Avx2Isa>;
#endif
    default: return &kTable<PortableIsa>;
  }
}

KernelIsa isaFor(const CpuFeatures& f) {
#if WEFT_X86
  bool avx2 = f.avx2 && f.fma && f.f16c && f.bmi && f.bmi2;
  bool avx512 = avx2 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq;
  return avx512 ? KernelIsa::Avx512 : avx2 ? KernelIsa::Avx2 : KernelIsa::Portable;
#else
  (void)f;
  return KernelIsa::Portable;
#endif
}

KernelIsa bestIsa() { return isaFor(detectedCpuFeatures()); }

std::atomic<KernelIsa> gIsa{KernelIsa::Portable};
std::atomic<const KernelTable*> gTable{nullptr};

// The first call picks the best set the CPU features allow, capped by WEFT_KERNEL_ISA. Racing
// first calls all compute the same answer, so no lock is needed.
const KernelTable* initTable() {
  KernelIsa isa = isaFor(usableCpuFeatures());
  WEFT_INFO(kLogInit, "reduction kernels: %s", kernelIsaName(isa));
  gIsa.store(isa, std::memory_order_relaxed);
  const KernelTable* table = tableFor(isa);
  gTable.store(table, std::memory_order_release);
  return table;
}

inline const KernelTable& table() {
  const KernelTable* t = gTable.load(std::memory_order_acquire);
  if (__builtin_expect(t == nullptr, 0)) t = initTable();
  return *t;
}

}  // namespace

void reduceBuffers(void* dst, const void* a, const void* b, size_t count, ncclDataType_t type, ReduceOp op) {
  table().reduce[type][static_cast<int>(op)](dst, a, b, count);
}

void reduceLinesToTwoStreaming(void* dst, void* dst2, const void* a, const void* b, size_t lines, ncclDataType_t type,
                               ReduceOp op) {
  table().reduceTwo[type][static_cast<int>(op)](dst, dst2, a, b, lines);
}

void scaleBuffer(void* dst, const void* src, size_t count, ncclDataType_t type, const void* scalar) {
  table().scale[type](dst, src, count, scalar);
}

void divideBuffer(void* dst, const void* src, size_t count, ncclDataType_t type, uint64_t divisor) {
  table().divide[type](dst, src, count, divisor == 0 ? 1 : divisor);
}

KernelIsa kernelIsa() {
  table();
  return gIsa.load(std::memory_order_relaxed);
}

const char* kernelIsaName(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::Avx512: return "avx512";
    case KernelIsa::Avx2: return "avx2";
    default: return "portable";
  }
}

bool kernelIsaSupported(KernelIsa isa) { return static_cast<int>(isa) <= static_cast<int>(bestIsa()); }

bool setKernelIsa(KernelIsa isa) {
  if (!kernelIsaSupported(isa)) return false;
  gIsa.store(isa, std::memory_order_relaxed);
  gTable.store(tableFor(isa), std::memory_order_release);
  return true;
}

}  // namespace weft
