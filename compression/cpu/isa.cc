#include <atomic>
#include <cstdlib>
#include <cstring>

#include "common/settings.h"
#include "compression/cpu/simd.h"

namespace weft::compression {

Isa detectedIsa() {
#if defined(__x86_64__) || defined(__i386__)
  static const Isa best = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("bmi2"))
      return Isa::kAvx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2")) return Isa::kAvx2;
    return Isa::kPortable;
  }();
  return best;
#else
  return Isa::kPortable;
#endif
}

namespace {
// -1: not forced. WEFT_COMPRESSION_ISA=portable|avx2|avx512 caps the choice at start-up.
std::atomic<int> forced{-1};

Isa fromEnvironment() {
  Isa best = detectedIsa();
  const char* value = settingText(Setting::WeftCompressionIsa);
  if (value == nullptr) return best;
  Isa wanted = best;
  if (std::strcmp(value, "portable") == 0) wanted = Isa::kPortable;
  if (std::strcmp(value, "avx2") == 0) wanted = Isa::kAvx2;
  return static_cast<int>(wanted) < static_cast<int>(best) ? wanted : best;
}
}  // namespace

Isa activeIsa() {
  int f = forced.load(std::memory_order_relaxed);
  if (f >= 0) return static_cast<Isa>(f);
  static const Isa initial = fromEnvironment();
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
