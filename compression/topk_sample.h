// The sample of approximate top-k (Deep Gradient Compression's threshold estimate). The CPU
// selector (topk.cc) and the CUDA kernels (cuda/topk.cu) both take it from here, so that for
// the same chunk, configuration and seed they pick the same threshold.
//
//   lines of the chunk    L = n / 16 (whole 64-byte lines; the last n % 16 are never sampled)
//   sample lines          S = max(1, sampleSize / 16); m = 16 S keys
//   line of sample j      splitmix64(seed ^ 0xD1B54A32D192ED03 * (j + 1)) mod L
//   threshold t           the r-th largest sampled key, r = clamp(ceil(oversample k m / n), 1, m)
//   used when             k < n and L >= 4 S; otherwise the selection is exact
//   seed                  EncodeContext seed ^ firstIndex (the codec's)
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "compression/rng.h"
#include "compression/types.h"

namespace weft::compression {

inline uint32_t topkSampleLines(uint32_t sampleSize) { return std::max<uint32_t>(1, sampleSize / 16); }

inline bool topkUsesSample(size_t n, size_t k, uint32_t sampleLines) {
  return k < n && n / 16 >= 4 * static_cast<size_t>(sampleLines);
}

WEFT_HD uint64_t topkSampleLine(uint64_t seed, uint32_t j, uint64_t lines) {
  return splitmix64(seed ^ (0xD1B54A32D192ED03ull * (j + 1ull))) % lines;
}

// r: the threshold is the r-th largest of the m sampled keys.
inline size_t topkSampleRank(double oversample, size_t k, size_t m, size_t n) {
  double rank = std::ceil(oversample * static_cast<double>(k) * static_cast<double>(m) / static_cast<double>(n));
  return static_cast<size_t>(std::clamp(rank, 1.0, static_cast<double>(m)));
}

inline uint64_t topkSampleSeed(const EncodeContext& ctx) { return ctx.seed ^ ctx.firstIndex; }

}  // namespace weft::compression
