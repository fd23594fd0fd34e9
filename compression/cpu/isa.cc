#include <atomic>

#include "common/cpu_features.h"
#include "compression/cpu/simd.h"

namespace weft::compression {

namespace {

// The codecs' own requirements: AVX-512 F/BW/VL/DQ with BMI2, or AVX2 with BMI2.
Isa isaFor(const CpuFeatures& f) {
#if defined(__x86_64__) || defined(__i386__)
  if (f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.bmi2) return Isa::kAvx512;
  if (f.avx2 && f.bmi2) return Isa::kAvx2;
#else
  (void)f;
#endif
  return Isa::kPortable;
}

// -1: not forced.
std::atomic<int> forced{-1};

}  // namespace

Isa detectedIsa() { return isaFor(detectedCpuFeatures()); }

Isa activeIsa() {
  int f = forced.load(std::memory_order_relaxed);
  if (f >= 0) return static_cast<Isa>(f);
  // The CPU features capped by WEFT_KERNEL_ISA (WEFT_COMPRESSION_ISA is its deprecated alias).
  static const Isa initial = isaFor(usableCpuFeatures());
  return initial;
}

Isa forceIsa(Isa isa) {
  Isa best = detectedIsa();
  Isa chosen = static_cast<int>(isa) < static_cast<int>(best) ? isa : best;
  forced.store(static_cast<int>(chosen), std::memory_order_relaxed);
  return chosen;
}

const char* isaName(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return "avx512";
    case Isa::kAvx2: return "avx2";
    default: return "portable";
  }
}

}  // namespace weft::compression
