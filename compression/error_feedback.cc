#include "compression/error_feedback.h"

#include <algorithm>
#include <cstring>

#include "common/status.h"
#include "compression/cast.h"

namespace weft::compression {

ErrorFeedback::ErrorFeedback(size_t count) : residual_(count, 0.0f) {}

void ErrorFeedback::reset() { std::fill(residual_.begin(), residual_.end(), 0.0f); }

namespace {
// r[0..n) += grad[begin..begin+n) as float.
void addGradient(float* r, const void* grad, ncclDataType_t type, size_t begin, size_t n, float* scratch) {
  if (type == ncclFloat32) {
    const float* g = static_cast<const float*>(grad) + begin;
    for (size_t i = 0; i < n; ++i) r[i] = r[i] + g[i];
    return;
  }
  halfToFloatArray(static_cast<const uint16_t*>(grad) + begin, n, scratch, type == ncclBfloat16);
  for (size_t i = 0; i < n; ++i) r[i] = r[i] + scratch[i];
}
}  // namespace

ncclResult_t ErrorFeedback::encode(Codec& codec, const void* grad, ncclDataType_t type, size_t offset, size_t count,
                                   void* dst, const EncodeContext& ctx) {
  if (offset > residual_.size() || count > residual_.size() - offset)
    return fail(ncclInvalidArgument, "compression: error feedback range [%zu, %zu) outside a buffer of %zu", offset,
                offset + count, residual_.size());
  if (count > codec.maxCount())
    return fail(ncclInvalidArgument, "compression: chunk of %zu elements exceeds the codec's maximum %zu", count,
                codec.maxCount());
  if (!isCodecDataType(type))
    return fail(ncclInvalidArgument, "compression: data type %d is not float32, float16 or bfloat16",
                static_cast<int>(type));
  float* r = residual_.data() + offset;
  // Tiles keep c = r + grad in cache between encoding it and subtracting what was sent.
  size_t tile = codec.granule() == 0 ? count : codec.tileElements();
  float scratch[1024];
  for (size_t begin = 0; begin < count; begin += tile) {
    size_t n = std::min(tile, count - begin);
    for (size_t s = 0; s < n; s += 1024)
      addGradient(r + begin + s, grad, type, begin + s, std::min<size_t>(1024, n - s), scratch);
    codec.encodeRange(r + begin, begin, begin + n, count, dst, ctx);
    codec.decodeRange(dst, begin, begin + n, count, r + begin, true, -1.0f);
  }
  return ncclSuccess;
}

}  // namespace weft::compression
