// The counter-based random numbers of stochastic rounding: a pure function of (seed, element
// index), so results do not depend on threads, chunking or device. CPU and CUDA kernels use
// these same functions.
//
//   key(seed, hi)  = splitmix64(seed ^ (hi + 1) * 0x9E3779B97F4A7C15)   (hi = index >> 32)
//   bits(i)        = mix32(mix32(lo32(i) ^ key.lo) ^ key.hi)
//   uniform(i)     = (bits(i) >> 8) * 2^-24                              in [0, 1)
//
// mix32 is C. Wellons' "lowbias32" finalizer (a bijection with low avalanche bias).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define WEFT_HD __host__ __device__ __forceinline__
#else
#define WEFT_HD inline
#endif

namespace weft::compression {

struct RngKey {
  uint32_t lo;
  uint32_t hi;
};

WEFT_HD uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

WEFT_HD uint32_t mix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x7feb352du;
  h ^= h >> 15;
  h *= 0x846ca68bu;
  h ^= h >> 16;
  return h;
}

// The key for the 2^32 indices whose upper half is `hi`.
WEFT_HD RngKey rngKey(uint64_t seed, uint32_t hi) {
  uint64_t z = splitmix64(seed ^ ((static_cast<uint64_t>(hi) + 1ull) * 0x9E3779B97F4A7C15ull));
  return RngKey{static_cast<uint32_t>(z), static_cast<uint32_t>(z >> 32)};
}

WEFT_HD uint32_t rngBits(RngKey key, uint32_t lo) { return mix32(mix32(lo ^ key.lo) ^ key.hi); }

// 24 random bits as a float in [0, 1): exact (no rounding) on every device.
WEFT_HD float rngUniform(RngKey key, uint32_t lo) {
  return static_cast<float>(static_cast<int32_t>(rngBits(key, lo) >> 8)) * 0x1p-24f;
}

WEFT_HD float rngUniformAt(uint64_t seed, uint64_t index) {
  return rngUniform(rngKey(seed, static_cast<uint32_t>(index >> 32)), static_cast<uint32_t>(index));
}

}  // namespace weft::compression
