// Sign compression (signSGD with error feedback): one bit per element (the float's sign bit)
// and one float scale per block of B elements (B a multiple of 8):
//
//   scale = (sum over the block of |x|) / L       L = elements in the block
//   x'    = sign(x) * scale                       (+0 -> +scale, -0 -> -scale)
//
// The sum is computed in float in a fixed order so that every CPU variant and the CUDA kernel
// give the same bits: 16 lanes, lane l adds |x[l]|, |x[l+16]|, ... in turn (lanes past the
// block's end add nothing), then lanes are folded l += l+8, l += l+4, l += l+2, l += l+1.
// A block holding NaN or Inf gets scale NaN (decodes to NaN). The scale keeps the block's l1
// norm (sum |x'| = sum |x|, up to rounding): what error feedback needs.
#pragma once

#include <cstddef>
#include <cstdint>

namespace weft::compression {

size_t signEncodedBytes(uint32_t blockSize, size_t count);
// Ranges as in quantize.h: x[0] is element `begin`; begin a multiple of blockSize.
void signEncode(const float* x, size_t begin, size_t end, size_t count, uint32_t blockSize, uint8_t* encoded);
void signDecode(const uint8_t* encoded, size_t begin, size_t end, size_t count, uint32_t blockSize, float* out,
                bool accumulate, float alpha);

}  // namespace weft::compression
