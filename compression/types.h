// Codec descriptions shared by the CPU and CUDA kernels and the codec front end.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl.h"

namespace weft::compression {

// Element types a codec accepts as gradients: ncclFloat32, ncclFloat16, ncclBfloat16.
bool isCodecDataType(ncclDataType_t type);

enum class CodecKind : uint8_t {
  kFp16,        // cast to IEEE binary16, round to nearest even
  kBf16,        // cast to bfloat16, round to nearest even
  kInt8,        // int8 in blocks, one float scale per block
  kInt4,        // 4-bit in blocks, one float scale per block
  kSign,        // 1 bit per element, one float scale (mean |x|) per block
  kTopK,        // exact top-k by magnitude: (index, value) pairs
  kTopKApprox,  // top-k above a threshold estimated from a sample (Deep Gradient Compression)
};
const char* codecName(CodecKind kind);
// Parses the names codecName returns ("fp16", "bf16", "int8", "int4", "sign", "topk",
// "topk-approx"); false when unknown.
bool parseCodecKind(const char* name, CodecKind* kind);

enum class Rounding : uint8_t {
  kNearest,     // round to nearest, ties to even
  kStochastic,  // round up with probability equal to the fraction (unbiased)
};

struct CodecConfig {
  CodecKind kind = CodecKind::kInt8;
  // Elements per scale for kInt8 / kInt4 / kSign: 8..8192, a multiple of 8.
  uint32_t blockSize = 256;
  // kInt8 / kInt4 only. Stochastic rounding draws from rng.h with the seed and element
  // indices of EncodeContext.
  Rounding rounding = Rounding::kNearest;
  // kTopK / kTopKApprox: k = clamp(ceil(ratio * count), 1, count), 0 < ratio <= 1.
  double topkRatio = 0.01;
  // kTopKApprox: the threshold is the sample's (oversample * k / count) quantile, so about
  // oversample * k elements pass it; the exact top k of those are kept. >= 1 almost always
  // gives exactly k pairs; < 1 gives about oversample * k.
  double topkOversample = 1.25;
  // kTopKApprox: number of sampled elements (whole 64-byte lines at hashed positions).
  uint32_t topkSampleSize = 65536;
};

// Per-call parameters of encode. Stochastic rounding and top-k sampling draw from
// (seed, firstIndex + i) for element i of the chunk: pass the chunk's position in the whole
// gradient as firstIndex and the same seed on every rank/step that must agree.
struct EncodeContext {
  uint64_t seed = 0;
  uint64_t firstIndex = 0;
};

// Encoded layouts (all little-endian; see docs/compression.md):
//   fp16 / bf16:  count uint16
//   int8:         ceil(count/B) float scales, then count int8
//   int4:         ceil(count/B) float scales, then per block ceil(L/2) bytes
//   sign:         ceil(count/B) float scales, then ceil(count/8) bytes of sign bits
//   top-k:        uint32 stored, uint32 capacity k, k uint32 indices, k float values
size_t encodedBytes(const CodecConfig& config, size_t count);
// k for a chunk of `count` elements (top-k codecs).
size_t topkCount(const CodecConfig& config, size_t count);

}  // namespace weft::compression
