// Shared helpers of the compression tests: data of several distributions.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace weft::compression::testing {

enum class Dist { kNormal, kHeavyTail, kAllEqual, kZeros, kDenormal, kMixedScale };

inline const char* distName(Dist d) {
  switch (d) {
    case Dist::kNormal: return "normal";
    case Dist::kHeavyTail: return "heavy_tail";
    case Dist::kAllEqual: return "all_equal";
    case Dist::kZeros: return "zeros";
    case Dist::kDenormal: return "denormal";
    case Dist::kMixedScale: return "mixed_scale";
  }
  return "?";
}

inline std::vector<float> makeData(Dist d, size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::cauchy_distribution<float> cauchy(0.0f, 1.0f);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    switch (d) {
      case Dist::kNormal: v[i] = normal(gen); break;
      case Dist::kHeavyTail: v[i] = std::clamp(cauchy(gen), -1e30f, 1e30f); break;
      case Dist::kAllEqual: v[i] = -0.375f; break;
      case Dist::kZeros: v[i] = 0.0f; break;
      case Dist::kDenormal: v[i] = normal(gen) * 1e-39f; break;
      case Dist::kMixedScale: v[i] = normal(gen) * std::ldexp(1.0f, static_cast<int>(i / 1000 % 40) - 20); break;
    }
  }
  return v;
}

inline const Dist kAllDists[] = {Dist::kNormal, Dist::kHeavyTail, Dist::kAllEqual,
                                 Dist::kZeros,  Dist::kDenormal,  Dist::kMixedScale};

}  // namespace weft::compression::testing
