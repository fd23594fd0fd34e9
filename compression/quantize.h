// Block quantization to int8 and int4: one float scale per block of B elements.
//
//   scale = max|x| / Q      (Q = 127 for int8, 7 for int4; |x| compared as bit patterns)
//   q     = clamp(round(x * (Q / max|x|)), -Q, Q)      round: nearest-even or stochastic
//   x'    = q * scale
//
// Special blocks: a block holding NaN or +-Inf gets scale NaN and decodes to NaN everywhere
// (the poison propagates, so loss scalers see it); a block whose max|x| < 2^-100 (zeros,
// denormals, tiny values) gets scale 0 and decodes to zeros.
//
// The kernels work on ranges [begin, end) of a chunk of `count` elements whose encoded form
// is `encoded` (layout in types.h); begin must be a multiple of B, end a multiple of B or count.
#pragma once

#include <cstddef>
#include <cstdint>

#include "compression/types.h"

namespace weft::compression {

inline constexpr uint32_t kQuantizeTinyBits = 0x0d800000u;  // 2^-100

struct QuantizeParams {
  int bits = 8;  // 8 or 4
  uint32_t blockSize = 256;
  Rounding rounding = Rounding::kNearest;
  uint64_t seed = 0;
  uint64_t firstIndex = 0;  // global index of the chunk's element 0
};

size_t quantizeEncodedBytes(int bits, uint32_t blockSize, size_t count);

// x[0] is element `begin` of the chunk.
void quantizeEncode(const float* x, size_t begin, size_t end, size_t count, const QuantizeParams& params,
                    uint8_t* encoded);
// out[0] receives element `begin`. accumulate: out += alpha * x'; else out = x'.
void quantizeDecode(const uint8_t* encoded, size_t begin, size_t end, size_t count, int bits, uint32_t blockSize,
                    float* out, bool accumulate, float alpha);

}  // namespace weft::compression
