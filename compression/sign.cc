#include "compression/sign.h"

#include <algorithm>
#include <bit>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "compression/cpu/simd.h"

namespace weft::compression {

size_t signEncodedBytes(uint32_t blockSize, size_t count) {
  return (count + blockSize - 1) / blockSize * sizeof(float) + (count + 7) / 8;
}

namespace {

#define AI __attribute__((always_inline)) inline

// Sum of |x| and max of the |x| bit patterns over one block, in the documented order.
AI float blockMeanAbs(const float* x, uint32_t n) {
  using F = simd::V<16>::F;
  using U = simd::V<16>::U;
  F sum = {};
  U maxBits = {};
  uint32_t i = 0;
  for (; i + 16 <= n; i += 16) {
    U b = simd::load<U>(x + i) & 0x7fffffffu;
    maxBits = b > maxBits ? b : maxBits;
    sum = sum + (F)b;
  }
  if (i < n) {
    alignas(64) float tail[16] = {};
    std::memcpy(tail, x + i, (n - i) * sizeof(float));
    U b = simd::load<U>(tail) & 0x7fffffffu;
    maxBits = b > maxBits ? b : maxBits;
    sum = sum + (F)b;
  }
  uint32_t m = 0;
  for (int l = 0; l < 16; ++l) m = std::max(m, maxBits[l]);
  if (m > 0x7f7fffffu) return std::bit_cast<float>(0x7fc00000u);
  for (int step = 8; step >= 1; step /= 2)
    for (int l = 0; l < step; ++l) sum[l] = sum[l] + sum[l + step];
  return sum[0] / static_cast<float>(n);
}

// Packs the sign bits of x[0..n) (n a multiple of 8 except at the chunk's end).
#if defined(__x86_64__)
WEFT_CODEC_TARGET_AVX512 void packSignsAvx512(const float* x, size_t n, uint8_t* out) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    uint16_t m = static_cast<uint16_t>(_mm512_movepi32_mask(_mm512_loadu_si512(x + i)));
    std::memcpy(out + i / 8, &m, 2);
  }
  for (; i < n; i += 8) {
    uint8_t b = 0;
    for (size_t j = 0; j < 8 && i + j < n; ++j)
      b |= static_cast<uint8_t>((std::bit_cast<uint32_t>(x[i + j]) >> 31) << j);
    out[i / 8] = b;
  }
}
WEFT_CODEC_TARGET_AVX2 void packSignsAvx2(const float* x, size_t n, uint8_t* out) {
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    uint32_t m = static_cast<uint32_t>(_mm256_movemask_ps(_mm256_loadu_ps(x + i))) |
                 static_cast<uint32_t>(_mm256_movemask_ps(_mm256_loadu_ps(x + i + 8))) << 8 |
                 static_cast<uint32_t>(_mm256_movemask_ps(_mm256_loadu_ps(x + i + 16))) << 16 |
                 static_cast<uint32_t>(_mm256_movemask_ps(_mm256_loadu_ps(x + i + 24))) << 24;
    std::memcpy(out + i / 8, &m, 4);
  }
  for (; i < n; i += 8) {
    uint8_t b = 0;
    for (size_t j = 0; j < 8 && i + j < n; ++j)
      b |= static_cast<uint8_t>((std::bit_cast<uint32_t>(x[i + j]) >> 31) << j);
    out[i / 8] = b;
  }
}
#endif
void packSignsPortable(const float* x, size_t n, uint8_t* out) {
  for (size_t i = 0; i < n; i += 8) {
    uint8_t b = 0;
    for (size_t j = 0; j < 8 && i + j < n; ++j)
      b |= static_cast<uint8_t>((std::bit_cast<uint32_t>(x[i + j]) >> 31) << j);
    out[i / 8] = b;
  }
}
void packSigns(const float* x, size_t n, uint8_t* out) {
#if defined(__x86_64__)
  switch (activeIsa()) {
    case Isa::kAvx512: return packSignsAvx512(x, n, out);
    case Isa::kAvx2: return packSignsAvx2(x, n, out);
    default: break;
  }
#endif
  packSignsPortable(x, n, out);
}

template <int W>
AI float blockScaleBody(const float* x, uint32_t n) {
  return blockMeanAbs(x, n);
}
WEFT_CODEC_DISPATCH(float, blockScale, blockScaleBody, (const float* x, uint32_t n), (x, n))

template <int W>
AI void decodeBody(const uint8_t* bits, uint32_t n, float scale, float* out, bool accumulate, float alpha) {
  using F = simd::V<8>::F;
  using U = simd::V<8>::U;
  const U lanes = simd::iota<U>();
  const uint32_t scaleBits = std::bit_cast<uint32_t>(scale);
  uint32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    U b = ((U{} + bits[i / 8]) >> lanes) << 31;
    F v = (F)(b | scaleBits);
    if (accumulate) v = simd::load<F>(out + i) + alpha * v;
    simd::store(out + i, v);
  }
  for (; i < n; ++i) {
    float v = std::bit_cast<float>(scaleBits | (static_cast<uint32_t>(bits[i / 8] >> (i % 8)) & 1u) << 31);
    out[i] = accumulate ? out[i] + alpha * v : v;
  }
}
WEFT_CODEC_DISPATCH(void, decodeRun, decodeBody,
                    (const uint8_t* bits, uint32_t n, float scale, float* out, bool accumulate, float alpha),
                    (bits, n, scale, out, accumulate, alpha))

}  // namespace

void signEncode(const float* x, size_t begin, size_t end, size_t count, uint32_t blockSize, uint8_t* encoded) {
  const size_t blocks = (count + blockSize - 1) / blockSize;
  uint8_t* payload = encoded + blocks * sizeof(float);
  for (size_t start = begin; start < end; start += blockSize) {
    const uint32_t n = static_cast<uint32_t>(std::min<size_t>(blockSize, count - start));
    float scale = blockScale(x + (start - begin), n);
    std::memcpy(encoded + start / blockSize * sizeof(float), &scale, sizeof scale);
    packSigns(x + (start - begin), n, payload + start / 8);
  }
}

void signDecode(const uint8_t* encoded, size_t begin, size_t end, size_t count, uint32_t blockSize, float* out,
                bool accumulate, float alpha) {
  const size_t blocks = (count + blockSize - 1) / blockSize;
  const uint8_t* payload = encoded + blocks * sizeof(float);
  for (size_t start = begin; start < end; start += blockSize) {
    const uint32_t n = static_cast<uint32_t>(std::min<size_t>(blockSize, count - start));
    float scale;
    std::memcpy(&scale, encoded + start / blockSize * sizeof(float), sizeof scale);
    decodeRun(payload + start / 8, n, scale, out + (start - begin), accumulate, alpha);
  }
}

}  // namespace weft::compression
