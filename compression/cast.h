// Casts to IEEE binary16 and bfloat16, round to nearest even (common/numeric.h).
//
// fp16: |x| >= 65520 becomes +-Inf; below 2^-14 subnormal, below 2^-25 zero; NaN stays a
// quiet NaN with the top of its payload. Relative error <= 2^-11 in the normal range.
// bf16: same exponent range as float; relative error <= 2^-8; NaN stays a quiet NaN.
#pragma once

#include <cstddef>
#include <cstdint>

namespace weft::compression {

void castEncode(const float* x, size_t n, uint16_t* out, bool bf16);
// accumulate: out += alpha * x'; else out = x'.
void castDecode(const uint16_t* in, size_t n, float* out, bool bf16, bool accumulate, float alpha);
// Element types to float and back (for fp16 / bf16 gradients), same rounding.
void halfToFloatArray(const uint16_t* in, size_t n, float* out, bool bf16);
void floatToHalfArray(const float* in, size_t n, uint16_t* out, bool bf16);

}  // namespace weft::compression
