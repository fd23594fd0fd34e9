#include "compression/quantize.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "compression/cpu/simd.h"
#include "compression/rng.h"

namespace weft::compression {

size_t quantizeEncodedBytes(int bits, uint32_t blockSize, size_t count) {
  size_t blocks = (count + blockSize - 1) / blockSize;
  size_t payload = bits == 8 ? count : (count / blockSize) * (blockSize / 2) + ((count % blockSize) + 1) / 2;
  return blocks * sizeof(float) + payload;
}

namespace {

#define AI __attribute__((always_inline)) inline
constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23: (y + M) - M rounds |y| < 2^22 to nearest-even

struct BlockScale {
  float scale;
  float inv;
};

AI BlockScale blockScale(uint32_t maxBits, float qmax) {
  if (maxBits > 0x7f7fffffu) return {std::bit_cast<float>(0x7fc00000u), 0.0f};
  if (maxBits < kQuantizeTinyBits) return {0.0f, 0.0f};
  float amax = std::bit_cast<float>(maxBits);
  return {amax / qmax, qmax / amax};
}

// The scalar twin of the vector loop: same operations in the same order.
AI int8_t quantizeOne(float x, float inv, float qmax, bool stochastic, float u) {
  float y = x * inv;
  if (stochastic) y = y + u;
  float r = (y + kRoundMagic) - kRoundMagic;
  if (stochastic) r = r > y ? r - 1.0f : r;
  r = r > qmax ? qmax : r;
  r = r < -qmax ? -qmax : r;
  return static_cast<int8_t>(static_cast<int32_t>(r));
}

template <int W>
AI uint32_t maxAbsBits(const float* x, uint32_t n) {
  using U = typename simd::V<W>::U;
  U m = {};
  uint32_t i = 0;
  for (; i + W <= n; i += W) {
    U b = simd::load<U>(x + i) & 0x7fffffffu;
    m = b > m ? b : m;
  }
  uint32_t best = 0;
  for (int j = 0; j < W; ++j) best = std::max(best, m[j]);
  for (; i < n; ++i) best = std::max(best, std::bit_cast<uint32_t>(x[i]) & 0x7fffffffu);
  return best;
}

// Quantizes one block of n elements to q[0..n); returns its scale.
template <int W>
AI float quantizeBlock(const float* x, uint32_t n, float qmax, bool stochastic, uint64_t seed, uint64_t index0,
                       int8_t* q) {
  using F = typename simd::V<W>::F;
  using I = typename simd::V<W>::I;
  using U = typename simd::V<W>::U;
  using B = typename simd::V<W>::B;
  BlockScale s = blockScale(maxAbsBits<W>(x, n), qmax);
  if (s.inv == 0.0f) {
    std::memset(q, 0, n);
    return s.scale;
  }
  uint32_t i = 0;
  uint64_t hi = index0 >> 32;
  bool sameKey = ((index0 + n - 1) >> 32) == hi;  // the block does not cross a 2^32 boundary
  RngKey key = rngKey(seed, static_cast<uint32_t>(hi));
  if (!stochastic || sameKey) {
    const U lanes = simd::iota<U>();
    const uint32_t lo0 = static_cast<uint32_t>(index0);
    for (; i + W <= n; i += W) {
      F y = simd::load<F>(x + i) * s.inv;
      if (stochastic) {
        U h = (lanes + (lo0 + i)) ^ key.lo;
        h ^= h >> 16;
        h *= 0x7feb352du;
        h ^= h >> 15;
        h *= 0x846ca68bu;
        h ^= h >> 16;
        h ^= key.hi;
        h ^= h >> 16;
        h *= 0x7feb352du;
        h ^= h >> 15;
        h *= 0x846ca68bu;
        h ^= h >> 16;
        F u = __builtin_convertvector((I)(h >> 8), F) * 0x1p-24f;
        y = y + u;
      }
      F r = (y + kRoundMagic) - kRoundMagic;
      if (stochastic) r = r > y ? r - 1.0f : r;
      r = r > qmax ? qmax : r;
      r = r < -qmax ? -qmax : r;
      simd::store(q + i, __builtin_convertvector(__builtin_convertvector(r, I), B));
    }
  }
  for (; i < n; ++i) {
    float u = stochastic ? rngUniformAt(seed, index0 + i) : 0.0f;
    q[i] = quantizeOne(x[i], s.inv, qmax, stochastic, u);
  }
  return s.scale;
}

template <int W>
AI void encodeBody(const float* x, size_t begin, size_t end, size_t count, const QuantizeParams* p, uint8_t* encoded) {
  const uint32_t bs = p->blockSize;
  const size_t blocks = (count + bs - 1) / bs;
  float* scales = reinterpret_cast<float*>(encoded);  // stored with memcpy below
  uint8_t* payload = encoded + blocks * sizeof(float);
  const float qmax = p->bits == 8 ? 127.0f : 7.0f;
  const bool stochastic = p->rounding == Rounding::kStochastic;
  alignas(64) int8_t q[8192 + 64];
  for (size_t start = begin; start < end; start += bs) {
    const size_t block = start / bs;
    const uint32_t n = static_cast<uint32_t>(std::min<size_t>(bs, count - start));
    const float* xb = x + (start - begin);
    if (p->bits == 8) {
      float scale = quantizeBlock<W>(xb, n, qmax, stochastic, p->seed, p->firstIndex + start,
                                     reinterpret_cast<int8_t*>(payload + start));
      std::memcpy(scales + block, &scale, sizeof scale);
      continue;
    }
    float scale = quantizeBlock<W>(xb, n, qmax, stochastic, p->seed, p->firstIndex + start, q);
    std::memcpy(scales + block, &scale, sizeof scale);
    // Split halves: byte j holds element j (low nibble) and element j + half (high nibble).
    uint8_t* out = payload + block * (bs / 2);
    const uint32_t half = (n + 1) / 2;
    const uint32_t pairs = n / 2;  // j < pairs has a high partner
    using B16 = simd::V<16>::B;
    uint32_t j = 0;
    for (; j + 16 <= pairs; j += 16) {
      B16 lo = simd::load<B16>(q + j);
      B16 hi = simd::load<B16>(q + half + j);
      simd::store(out + j, (lo & 15) | (hi << 4));
    }
    for (; j < pairs; ++j) out[j] = static_cast<uint8_t>((q[j] & 15) | (q[half + j] << 4));
    if (half != pairs) out[half - 1] = static_cast<uint8_t>(q[half - 1] & 15);
  }
}

template <int W>
AI void decodeRun(const int8_t* q, uint32_t n, float scale, float* out, bool accumulate, float alpha) {
  using F = typename simd::V<W>::F;
  using B = typename simd::V<W>::B;
  uint32_t i = 0;
  for (; i + W <= n; i += W) {
    F v = simd::widenToFloat<W>(simd::load<B>(q + i)) * scale;
    if (accumulate) v = simd::load<F>(out + i) + alpha * v;
    simd::store(out + i, v);
  }
  for (; i < n; ++i) {
    float v = static_cast<float>(q[i]) * scale;
    out[i] = accumulate ? out[i] + alpha * v : v;
  }
}

template <int W>
AI void decodeBody(const uint8_t* encoded, size_t begin, size_t end, size_t count, int bits, uint32_t bs, float* out,
                   bool accumulate, float alpha) {
  const size_t blocks = (count + bs - 1) / bs;
  const uint8_t* payload = encoded + blocks * sizeof(float);
  alignas(64) int8_t q[8192 + 64];
  for (size_t start = begin; start < end; start += bs) {
    const size_t block = start / bs;
    const uint32_t n = static_cast<uint32_t>(std::min<size_t>(bs, count - start));
    float scale;
    std::memcpy(&scale, encoded + block * sizeof(float), sizeof scale);
    float* o = out + (start - begin);
    if (bits == 8) {
      decodeRun<W>(reinterpret_cast<const int8_t*>(payload + start), n, scale, o, accumulate, alpha);
      continue;
    }
    const uint8_t* in = payload + block * (bs / 2);
    const uint32_t half = (n + 1) / 2;
    const uint32_t pairs = n / 2;
    using B16 = simd::V<16>::B;
    uint32_t j = 0;
    for (; j + 16 <= half; j += 16) {
      B16 b = simd::load<B16>(in + j);
      simd::store(q + j, (B16)(b << 4) >> 4);
      simd::store(q + half + j, b >> 4);  // may write past n into q's slack; ignored
    }
    for (; j < half; ++j) {
      int8_t b = static_cast<int8_t>(in[j]);
      q[j] = static_cast<int8_t>(static_cast<int8_t>(b << 4) >> 4);
      if (j < pairs) q[half + j] = static_cast<int8_t>(b >> 4);
    }
    decodeRun<W>(q, n, scale, o, accumulate, alpha);
  }
}

WEFT_CODEC_DISPATCH(void, encodeKernel, encodeBody,
                    (const float* x, size_t begin, size_t end, size_t count, const QuantizeParams* p, uint8_t* encoded),
                    (x, begin, end, count, p, encoded))
WEFT_CODEC_DISPATCH(void, decodeKernel, decodeBody,
                    (const uint8_t* encoded, size_t begin, size_t end, size_t count, int bits, uint32_t bs, float* out,
                     bool accumulate, float alpha),
                    (encoded, begin, end, count, bits, bs, out, accumulate, alpha))

}  // namespace

void quantizeEncode(const float* x, size_t begin, size_t end, size_t count, const QuantizeParams& params,
                    uint8_t* encoded) {
  encodeKernel(x, begin, end, count, &params, encoded);
}

void quantizeDecode(const uint8_t* encoded, size_t begin, size_t end, size_t count, int bits, uint32_t blockSize,
                    float* out, bool accumulate, float alpha) {
  decodeKernel(encoded, begin, end, count, bits, blockSize, out, accumulate, alpha);
}

}  // namespace weft::compression
