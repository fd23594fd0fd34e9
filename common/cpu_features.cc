#include "common/cpu_features.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <cstring>
#include <optional>
#include <string>

#include "common/log.h"
#include "common/settings.h"

namespace weft {

const CpuFeatures& detectedCpuFeatures() {
  static const CpuFeatures detected = [] {
    CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();  // may run before libgcc's constructor when called from static
                           // initializers
    f.avx2 = __builtin_cpu_supports("avx2");
    f.fma = __builtin_cpu_supports("fma");
    // From cpuid: clang's __builtin_cpu_supports does not know "f16c" (GCC's does).
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    f.f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
    f.bmi = __builtin_cpu_supports("bmi");
    f.bmi2 = __builtin_cpu_supports("bmi2");
    f.avx512f = __builtin_cpu_supports("avx512f");
    f.avx512bw = __builtin_cpu_supports("avx512bw");
    f.avx512vl = __builtin_cpu_supports("avx512vl");
    f.avx512dq = __builtin_cpu_supports("avx512dq");
#endif
    return f;
  }();
  return detected;
}

CpuFeatures capCpuFeatures(CpuFeatures features, const char* cap) {
  if (cap && strcmp(cap, "portable") == 0) return CpuFeatures{};
  if (cap && strcmp(cap, "avx2") == 0)
    features.avx512f = features.avx512bw = features.avx512vl = features.avx512dq = false;
  return features;
}

const CpuFeatures& usableCpuFeatures() {
  static const CpuFeatures usable = [] {
    std::optional<std::string> cap = settingString(Setting::WeftKernelIsa);
    if (std::optional<std::string> alias = settingString(Setting::WeftCompressionIsa)) {
      WEFT_WARN("WEFT_COMPRESSION_ISA is deprecated: use WEFT_KERNEL_ISA%s",
                cap ? " (set too, so WEFT_COMPRESSION_ISA is ignored)" : "");
      if (!cap) cap = alias;
    }
    return capCpuFeatures(detectedCpuFeatures(), cap ? cap->c_str() : nullptr);
  }();
  return usable;
}

}  // namespace weft
