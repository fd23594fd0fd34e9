#include "common/streaming_copy.h"

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "common/cpu_features.h"

namespace weft {

namespace {

__attribute__((target("avx2"))) void streamAvx2(char* dst, const char* src, size_t bytes) {
  // Align the destination to 32 bytes; the source may stay unaligned (loads tolerate it).
  size_t head = (32 - (reinterpret_cast<uintptr_t>(dst) & 31)) & 31;
  if (head > bytes) head = bytes;
  memcpy(dst, src, head);
  dst += head;
  src += head;
  bytes -= head;
  size_t body = bytes & ~size_t(127);
  for (size_t i = 0; i < body; i += 128) {
    prefetchStorePageAhead(dst + i, 128);
    __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 32));
    __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 64));
    __m256i d = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 96));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i), a);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i + 32), b);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i + 64), c);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i + 96), d);
  }
  memcpy(dst + body, src + body, bytes - body);
}

using CopyFunction = void (*)(char*, const char*, size_t);

CopyFunction chooseCopy() {
  if (usableCpuFeatures().avx2) return streamAvx2;
  return [](char* dst, const char* src, size_t bytes) { memcpy(dst, src, bytes); };
}

}  // namespace

void streamingCopyUnfenced(void* dst, const void* src, size_t bytes) {
  static const CopyFunction copy = chooseCopy();
  copy(static_cast<char*>(dst), static_cast<const char*>(src), bytes);
}

// Non-temporal stores are weakly ordered: fence before anyone is told the data is there.
void streamingFence() { _mm_sfence(); }

void streamingCopy(void* dst, const void* src, size_t bytes) {
  if (bytes < kStreamingCopyMinBytes) {
    memcpy(dst, src, bytes);
    return;
  }
  streamingCopyUnfenced(dst, src, bytes);
  streamingFence();
}

}  // namespace weft
