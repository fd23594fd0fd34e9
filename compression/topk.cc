#include "compression/topk.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "compression/cpu/simd.h"
#include "compression/topk_sample.h"

namespace weft::compression {
namespace {

#define AI __attribute__((always_inline)) inline

AI uint32_t keyOf(float x) { return std::bit_cast<uint32_t>(x) & 0x7fffffffu; }

// collectAtLeast: appends to out the indices i in [*pos, n) with key(x[i]) >= t, in order,
// stopping early (with *pos where it stopped) when fewer than 16 free slots remain.
// Requires n < 2^32.
#if defined(__x86_64__)
WEFT_CODEC_TARGET_AVX512 size_t collectAvx512(const float* x, size_t* pos, size_t n, uint32_t t, uint32_t* out,
                                              size_t room) {
  size_t i = *pos, c = 0;
  const __m512i tv = _mm512_set1_epi32(static_cast<int>(t));
  const __m512i absMask = _mm512_set1_epi32(0x7fffffff);
  const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  for (; i + 64 <= n && c + 64 <= room; i += 64) {
    __mmask16 m0 = _mm512_cmpge_epu32_mask(_mm512_and_si512(_mm512_loadu_si512(x + i), absMask), tv);
    __mmask16 m1 = _mm512_cmpge_epu32_mask(_mm512_and_si512(_mm512_loadu_si512(x + i + 16), absMask), tv);
    __mmask16 m2 = _mm512_cmpge_epu32_mask(_mm512_and_si512(_mm512_loadu_si512(x + i + 32), absMask), tv);
    __mmask16 m3 = _mm512_cmpge_epu32_mask(_mm512_and_si512(_mm512_loadu_si512(x + i + 48), absMask), tv);
    if ((m0 | m1 | m2 | m3) == 0) continue;
    const __mmask16 ms[4] = {m0, m1, m2, m3};
    for (int q = 0; q < 4; ++q) {
      if (ms[q] == 0) continue;
      __m512i idx = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(i + 16 * q)), lanes);
      _mm512_mask_compressstoreu_epi32(out + c, ms[q], idx);
      c += static_cast<size_t>(__builtin_popcount(ms[q]));
    }
  }
  for (; i < n && c + 16 <= room; ++i)
    if (keyOf(x[i]) >= t) out[c++] = static_cast<uint32_t>(i);
  *pos = i;
  return c;
}
WEFT_CODEC_TARGET_AVX2 size_t collectAvx2(const float* x, size_t* pos, size_t n, uint32_t t, uint32_t* out,
                                          size_t room) {
  size_t i = *pos, c = 0;
  // Keys are < 2^31, so a signed compare against t - 1 is key >= t (t = 0: against -1).
  const __m256i tv = _mm256_set1_epi32(static_cast<int>(t) - 1);
  const __m256i absMask = _mm256_set1_epi32(0x7fffffff);
  for (; i + 32 <= n && c + 32 <= room; i += 32) {
    uint32_t m = 0;
    for (int q = 0; q < 4; ++q) {
      __m256i k = _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i + 8 * q)), absMask);
      m |= static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(k, tv)))) << (8 * q);
    }
    while (m != 0) {
      out[c++] = static_cast<uint32_t>(i + static_cast<size_t>(__builtin_ctz(m)));
      m &= m - 1;
    }
  }
  for (; i < n && c + 16 <= room; ++i)
    if (keyOf(x[i]) >= t) out[c++] = static_cast<uint32_t>(i);
  *pos = i;
  return c;
}
#endif
size_t collectPortable(const float* x, size_t* pos, size_t n, uint32_t t, uint32_t* out, size_t room) {
  size_t i = *pos, c = 0;
  for (; i < n && c + 16 <= room; ++i)
    if (keyOf(x[i]) >= t) out[c++] = static_cast<uint32_t>(i);
  *pos = i;
  return c;
}
size_t collectAtLeast(const float* x, size_t* pos, size_t n, uint32_t t, uint32_t* out, size_t room) {
#if defined(__x86_64__)
  switch (activeIsa()) {
    case Isa::kAvx512: return collectAvx512(x, pos, n, t, out, room);
    case Isa::kAvx2: return collectAvx2(x, pos, n, t, out, room);
    default: break;
  }
#endif
  return collectPortable(x, pos, n, t, out, room);
}

// Histogram of (key >> shift) & mask over elements whose key >> (shift + width) == prefix.
void histogram(const float* x, size_t n, int shift, int width, uint32_t prefix, uint32_t* hist) {
  const uint32_t mask = (1u << width) - 1;
  const int high = shift + width;
  std::memset(hist, 0, sizeof(uint32_t) << width);
  if (high >= 31) {
    // Two interleaved copies hide the store-to-load latency of repeated bins.
    static thread_local uint32_t second[2048];
    std::memset(second, 0, sizeof(uint32_t) << width);
    size_t i = 0;
    for (; i + 2 <= n; i += 2) {
      ++hist[(keyOf(x[i]) >> shift) & mask];
      ++second[(keyOf(x[i + 1]) >> shift) & mask];
    }
    if (i < n) ++hist[(keyOf(x[i]) >> shift) & mask];
    for (uint32_t b = 0; b <= mask; ++b) hist[b] += second[b];
    return;
  }
  // Restricted levels: only keys >= prefix << high can match; gather those in batches.
  const uint32_t lowest = prefix << high;
  uint32_t batch[1024];
  size_t pos = 0;
  while (pos < n) {
    size_t got = collectAtLeast(x, &pos, n, lowest, batch, 1024);
    for (size_t j = 0; j < got; ++j) {
      uint32_t key = keyOf(x[batch[j]]);
      if ((key >> high) == prefix) ++hist[(key >> shift) & mask];
    }
  }
}

}  // namespace

TopKSelector::TopKSelector(size_t maxCount, size_t maxK, uint32_t sampleSize) {
  capacity_ = std::max<size_t>(2 * maxK, 4096);
  keys_.resize(capacity_);
  candIdx_.resize(capacity_);
  candVal_.resize(capacity_);
  sampleLines_ = topkSampleLines(sampleSize);
  sample_.resize(static_cast<size_t>(sampleLines_) * 16);
  // Pre-fault.
  std::fill(keys_.begin(), keys_.end(), 0u);
  std::fill(candIdx_.begin(), candIdx_.end(), 0u);
  std::fill(candVal_.begin(), candVal_.end(), 0.0f);
  (void)maxCount;
}

TopKSelector::Cut TopKSelector::selectInCandidates(size_t count, size_t needed) {
  uint32_t* keys = keys_.data();
  if (count > 4096) {
    // One radix step over the key range narrows the selection to one bin of 4096.
    uint32_t lo = 0xffffffffu, hi = 0;
    for (size_t j = 0; j < count; ++j) {
      lo = std::min(lo, keys[j]);
      hi = std::max(hi, keys[j]);
    }
    int shift = 0;
    while (((hi - lo) >> shift) >= 4096) ++shift;
    uint32_t hist[4096] = {};
    for (size_t j = 0; j < count; ++j) ++hist[(keys[j] - lo) >> shift];
    size_t above = 0;
    uint32_t b = (hi - lo) >> shift;
    for (;; --b) {
      if (above + hist[b] >= needed) break;
      above += hist[b];
    }
    size_t inBin = 0;
    for (size_t j = 0; j < count; ++j)
      if (((keys[j] - lo) >> shift) == b) keys[inBin++] = keys[j];
    count = inBin;
    needed -= above;
  }
  std::nth_element(keys, keys + (needed - 1), keys + count, std::greater<uint32_t>());
  uint32_t t = keys[needed - 1];
  size_t greater = 0;
  for (size_t j = 0; j + 1 < needed; ++j) greater += keys[j] > t;
  return Cut{t, needed - greater};
}

size_t TopKSelector::exact(const float* x, size_t n, size_t k, uint32_t* indices, float* values) {
  if (k == 0 || n == 0) return 0;
  if (k >= n) {
    for (size_t i = 0; i < n; ++i) {
      indices[i] = static_cast<uint32_t>(i);
      values[i] = x[i];
    }
    return n;
  }
  static const int kShift[3] = {20, 10, 0};
  static const int kWidth[3] = {11, 10, 10};
  uint32_t hist[2048];
  uint32_t prefix = 0;
  size_t needed = k;
  for (int level = 0; level < 3; ++level) {
    const int shift = kShift[level], width = kWidth[level];
    histogram(x, n, shift, width, prefix, hist);
    size_t above = 0;
    uint32_t b = (1u << width) - 1;
    for (;; --b) {
      if (above + hist[b] >= needed) break;
      above += hist[b];
    }
    needed -= above;
    prefix = (prefix << width) | b;
    const size_t inBin = hist[b];
    if (shift == 0) break;  // the cut key is prefix itself
    // k - needed elements lie above the bin. If they and the bin fit the buffer, one pass
    // gathers them all (in index order) and the selection finishes in the buffer.
    if ((k - needed) + inBin + 16 <= capacity_) {
      size_t pos = 0, count = 0;
      const uint32_t lowest = prefix << shift;
      while (pos < n) count += collectAtLeast(x, &pos, n, lowest, candIdx_.data() + count, capacity_ - count);
      size_t inBinCount = 0;
      for (size_t j = 0; j < count; ++j) {
        uint32_t key = keyOf(x[candIdx_[j]]);
        if ((key >> shift) == prefix) keys_[inBinCount++] = key;
      }
      Cut cut = selectInCandidates(inBinCount, needed);
      size_t out = 0, equal = 0;
      for (size_t j = 0; j < count; ++j) {
        uint32_t i = candIdx_[j];
        uint32_t key = keyOf(x[i]);
        if (key < cut.key) continue;
        if (key == cut.key) {
          if (equal == cut.takeEqual) continue;
          ++equal;
        }
        indices[out] = i;
        values[out] = x[i];
        ++out;
      }
      return out;
    }
  }
  // Many ties: the cut is the full key `prefix`; emit above it and the first `needed` equal.
  const Cut cut{prefix, needed};
  size_t out = 0, equal = 0, pos = 0;
  uint32_t batch[1024];
  while (pos < n) {
    size_t got = collectAtLeast(x, &pos, n, cut.key, batch, 1024);
    for (size_t j = 0; j < got; ++j) {
      uint32_t i = batch[j];
      uint32_t key = keyOf(x[i]);
      if (key == cut.key) {
        if (equal == cut.takeEqual) continue;
        ++equal;
      }
      indices[out] = i;
      values[out] = x[i];
      ++out;
    }
  }
  return out;
}

size_t TopKSelector::compact(size_t count, size_t k) {
  for (size_t j = 0; j < count; ++j) keys_[j] = keyOf(candVal_[j]);
  Cut cut = selectInCandidates(count, k);
  size_t out = 0, equal = 0;
  for (size_t j = 0; j < count; ++j) {
    uint32_t key = keyOf(candVal_[j]);
    if (key < cut.key) continue;
    if (key == cut.key) {
      if (equal == cut.takeEqual) continue;
      ++equal;
    }
    candIdx_[out] = candIdx_[j];
    candVal_[out] = candVal_[j];
    ++out;
  }
  lastThreshold_ = cut.key;
  return out;
}

size_t TopKSelector::approximate(const float* x, size_t n, size_t k, double oversample, uint64_t seed,
                                 uint32_t* indices, float* values) {
  const size_t lines = n / 16;
  if (k == 0 || n == 0) return 0;
  // k + 128 > capacity_ only when k exceeds the maxK given to the constructor (never in Codec).
  if (!topkUsesSample(n, k, sampleLines_) || k + 128 > capacity_) return exact(x, n, k, indices, values);
  // Sample whole lines at hashed positions (reproducible from the seed; topk_sample.h).
  const size_t m = static_cast<size_t>(sampleLines_) * 16;
  for (uint32_t j = 0; j < sampleLines_; ++j) {
    size_t line = topkSampleLine(seed, j, lines);
    for (int l = 0; l < 16; ++l) sample_[j * 16 + l] = keyOf(x[line * 16 + l]);
  }
  const size_t r = topkSampleRank(oversample, k, m, n);
  std::nth_element(sample_.begin(), sample_.begin() + (r - 1), sample_.begin() + m, std::greater<uint32_t>());
  uint32_t t = sample_[r - 1];
  sampleThreshold_ = t;
  // One pass: gather key >= t; cut to the top k whenever the buffer fills.
  const size_t cap = capacity_;
  size_t count = 0, pos = 0;
  while (pos < n) {
    if (count + 64 > cap) {  // the vector scans need 64 free slots to stay vectorized
      count = compact(count, k);
      // Later elements equal to the cut lose the tie to the kept ones (lower indices).
      if (lastThreshold_ == 0x7fffffffu) break;  // nothing can beat a full buffer of NaN-max keys
      t = std::max(t, lastThreshold_ + 1);
    }
    size_t got = collectAtLeast(x, &pos, n, t, candIdx_.data() + count, cap - count);
    for (size_t j = count; j < count + got; ++j) candVal_[j] = x[candIdx_[j]];
    count += got;
  }
  if (count > k) count = compact(count, k);
  std::memcpy(indices, candIdx_.data(), count * sizeof(uint32_t));
  std::memcpy(values, candVal_.data(), count * sizeof(float));
  return count;
}

}  // namespace weft::compression
