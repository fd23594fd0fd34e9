// The one CPU-feature detector: what the processor supports, and what weft's kernels may use
// (the reduction kernels, the compression codecs and the streaming copy each pick their
// variant from usableCpuFeatures()).
#pragma once

namespace weft {

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool bmi = false;
  bool bmi2 = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
};

// What this processor supports (all false off x86), detected once.
const CpuFeatures& detectedCpuFeatures();

// `features` without what `cap` excludes: "portable" excludes every extension, "avx2" the
// AVX-512 ones, "avx512" nothing.
CpuFeatures capCpuFeatures(CpuFeatures features, const char* cap);

// detectedCpuFeatures() capped by WEFT_KERNEL_ISA (or its deprecated alias
// WEFT_COMPRESSION_ISA, with a warning once), read once.
const CpuFeatures& usableCpuFeatures();

}  // namespace weft
