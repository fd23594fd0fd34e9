#include "compression/cast.h"

#include "common/numeric.h"
#include "compression/cpu/simd.h"

namespace weft::compression {
namespace {

#define AI __attribute__((always_inline)) inline

// Plain loops over common/numeric.h's branch-free conversions: GCC vectorizes them at -O3
// in each target variant.
template <int W>
AI void encodeBody(const float* __restrict x, size_t n, uint16_t* __restrict out, bool bf16) {
  if (bf16) {
    for (size_t i = 0; i < n; ++i) out[i] = floatToBfloat16(x[i]);
  } else {
    for (size_t i = 0; i < n; ++i) out[i] = floatToHalf(x[i]);
  }
}

template <int W>
AI void decodeBody(const uint16_t* __restrict in, size_t n, float* __restrict out, bool bf16, bool accumulate,
                   float alpha) {
  if (bf16) {
    if (accumulate) {
      for (size_t i = 0; i < n; ++i) out[i] = out[i] + alpha * bfloat16ToFloat(in[i]);
    } else {
      for (size_t i = 0; i < n; ++i) out[i] = bfloat16ToFloat(in[i]);
    }
  } else {
    if (accumulate) {
      for (size_t i = 0; i < n; ++i) out[i] = out[i] + alpha * halfToFloat(in[i]);
    } else {
      for (size_t i = 0; i < n; ++i) out[i] = halfToFloat(in[i]);
    }
  }
}

WEFT_CODEC_DISPATCH(void, encodeKernel, encodeBody,
                    (const float* __restrict x, size_t n, uint16_t* __restrict out, bool bf16), (x, n, out, bf16))
WEFT_CODEC_DISPATCH(void, decodeKernel, decodeBody,
                    (const uint16_t* __restrict in, size_t n, float* __restrict out, bool bf16, bool accumulate,
                     float alpha),
                    (in, n, out, bf16, accumulate, alpha))

}  // namespace

void castEncode(const float* x, size_t n, uint16_t* out, bool bf16) { encodeKernel(x, n, out, bf16); }
void castDecode(const uint16_t* in, size_t n, float* out, bool bf16, bool accumulate, float alpha) {
  decodeKernel(in, n, out, bf16, accumulate, alpha);
}
void halfToFloatArray(const uint16_t* in, size_t n, float* out, bool bf16) {
  decodeKernel(in, n, out, bf16, false, 1.0f);
}
void floatToHalfArray(const float* in, size_t n, uint16_t* out, bool bf16) { encodeKernel(in, n, out, bf16); }

}  // namespace weft::compression
