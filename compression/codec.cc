#include "compression/codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/status.h"
#include "compression/cast.h"
#include "compression/quantize.h"
#include "compression/sign.h"
#include "compression/topk_sample.h"

namespace weft::compression {

bool isCodecDataType(ncclDataType_t type) { return type == ncclFloat32 || type == ncclFloat16 || type == ncclBfloat16; }

const char* codecName(CodecKind kind) {
  switch (kind) {
    case CodecKind::kFp16: return "fp16";
    case CodecKind::kBf16: return "bf16";
    case CodecKind::kInt8: return "int8";
    case CodecKind::kInt4: return "int4";
    case CodecKind::kSign: return "sign";
    case CodecKind::kTopK: return "topk";
    case CodecKind::kTopKApprox: return "topk-approx";
  }
  return "invalid";
}

bool parseCodecKind(const char* name, CodecKind* kind) {
  for (CodecKind k : {CodecKind::kFp16, CodecKind::kBf16, CodecKind::kInt8, CodecKind::kInt4, CodecKind::kSign,
                      CodecKind::kTopK, CodecKind::kTopKApprox}) {
    if (name != nullptr && std::strcmp(name, codecName(k)) == 0) {
      *kind = k;
      return true;
    }
  }
  return false;
}

size_t topkCount(const CodecConfig& config, size_t count) {
  if (count == 0) return 0;
  double k = std::ceil(config.topkRatio * static_cast<double>(count) - 1e-9);
  return static_cast<size_t>(std::clamp(k, 1.0, static_cast<double>(count)));
}

size_t encodedBytes(const CodecConfig& config, size_t count) {
  switch (config.kind) {
    case CodecKind::kFp16:
    case CodecKind::kBf16: return count * 2;
    case CodecKind::kInt8: return quantizeEncodedBytes(8, config.blockSize, count);
    case CodecKind::kInt4: return quantizeEncodedBytes(4, config.blockSize, count);
    case CodecKind::kSign: return signEncodedBytes(config.blockSize, count);
    case CodecKind::kTopK:
    case CodecKind::kTopKApprox: return 8 + 8 * topkCount(config, count);
  }
  return 0;
}

namespace {

bool isBlockCodec(CodecKind kind) {
  return kind == CodecKind::kInt8 || kind == CodecKind::kInt4 || kind == CodecKind::kSign;
}
bool isTopK(CodecKind kind) { return kind == CodecKind::kTopK || kind == CodecKind::kTopKApprox; }

// The element types as float, tile by tile.
void toFloat(const void* src, ncclDataType_t type, size_t begin, size_t n, float* out) {
  if (type == ncclFloat32) {
    std::memcpy(out, static_cast<const float*>(src) + begin, n * sizeof(float));
  } else {
    halfToFloatArray(static_cast<const uint16_t*>(src) + begin, n, out, type == ncclBfloat16);
  }
}

struct TopKHeader {
  uint32_t stored;
  uint32_t capacity;
};

}  // namespace

ncclResult_t Codec::validate(const CodecConfig& c) {
  if (static_cast<int>(c.kind) > static_cast<int>(CodecKind::kTopKApprox))
    return fail(ncclInvalidArgument, "compression: unknown codec %d", static_cast<int>(c.kind));
  if (isBlockCodec(c.kind) && (c.blockSize < 8 || c.blockSize > 8192 || c.blockSize % 8 != 0))
    return fail(ncclInvalidArgument, "compression: block size %u must be a multiple of 8 in [8, 8192]", c.blockSize);
  if (c.rounding != Rounding::kNearest && c.rounding != Rounding::kStochastic)
    return fail(ncclInvalidArgument, "compression: unknown rounding %d", static_cast<int>(c.rounding));
  if (isTopK(c.kind) && !(c.topkRatio > 0.0 && c.topkRatio <= 1.0))
    return fail(ncclInvalidArgument, "compression: top-k ratio %g must be in (0, 1]", c.topkRatio);
  if (c.kind == CodecKind::kTopKApprox &&
      (!(c.topkOversample > 0.0 && c.topkOversample <= 16.0) || c.topkSampleSize < 16))
    return fail(ncclInvalidArgument, "compression: top-k oversample %g must be in (0, 16], sample size >= 16",
                c.topkOversample);
  return ncclSuccess;
}

Codec::Codec(const CodecConfig& config, size_t maxCount) : config_(config), maxCount_(maxCount) {
  size_t tile = 16384;
  if (isBlockCodec(config.kind)) tile = std::max<size_t>(config.blockSize, tile / config.blockSize * config.blockSize);
  tile_.assign(tile, 0.0f);  // assign pre-faults
  if (isTopK(config.kind)) {
    topk_ = std::make_unique<TopKSelector>(maxCount, topkCount(config, maxCount), config.topkSampleSize);
  }
}

ncclResult_t Codec::create(const CodecConfig& config, size_t maxCount, std::unique_ptr<Codec>* out) {
  if (out == nullptr) return fail(ncclInvalidArgument, "compression: null output");
  WEFT_CHECK(validate(config));
  if (isTopK(config.kind) && maxCount > 0xffffffffull)
    return fail(ncclInvalidArgument, "compression: top-k chunks are limited to 2^32 elements");
  out->reset(new Codec(config, maxCount));
  return ncclSuccess;
}

bool Codec::reducesEncoded() const {
  return config_.kind == CodecKind::kFp16 || config_.kind == CodecKind::kBf16 || config_.kind == CodecKind::kInt8 ||
         config_.kind == CodecKind::kInt4;
}

size_t Codec::granule() const {
  if (isBlockCodec(config_.kind)) return config_.blockSize;
  if (isTopK(config_.kind)) return 0;
  return 1;
}

ncclResult_t Codec::checkCall(size_t count, ncclDataType_t type, const char* what) const {
  if (count > maxCount_)
    return fail(ncclInvalidArgument, "compression: %s of %zu elements exceeds the codec's maximum %zu", what, count,
                maxCount_);
  if (!isCodecDataType(type))
    return fail(ncclInvalidArgument, "compression: %s: data type %d is not float32, float16 or bfloat16", what,
                static_cast<int>(type));
  return ncclSuccess;
}

void Codec::encodeRange(const float* x, size_t begin, size_t end, size_t count, void* dst, const EncodeContext& ctx) {
  uint8_t* out = static_cast<uint8_t*>(dst);
  switch (config_.kind) {
    case CodecKind::kFp16:
    case CodecKind::kBf16:
      castEncode(x, end - begin, reinterpret_cast<uint16_t*>(out) + begin, config_.kind == CodecKind::kBf16);
      return;
    case CodecKind::kInt8:
    case CodecKind::kInt4: {
      QuantizeParams p;
      p.bits = config_.kind == CodecKind::kInt8 ? 8 : 4;
      p.blockSize = config_.blockSize;
      p.rounding = config_.rounding;
      p.seed = ctx.seed;
      p.firstIndex = ctx.firstIndex;
      quantizeEncode(x, begin, end, count, p, out);
      return;
    }
    case CodecKind::kSign: signEncode(x, begin, end, count, config_.blockSize, out); return;
    case CodecKind::kTopK:
    case CodecKind::kTopKApprox: {
      // Whole chunks only (begin == 0, end == count).
      const size_t k = topkCount(config_, count);
      uint32_t* indices = reinterpret_cast<uint32_t*>(out + 8);
      float* values = reinterpret_cast<float*>(out + 8 + 4 * k);
      size_t stored = config_.kind == CodecKind::kTopK ? topk_->exact(x, count, k, indices, values)
                                                       : topk_->approximate(x, count, k, config_.topkOversample,
                                                                            topkSampleSeed(ctx), indices, values);
      TopKHeader h{static_cast<uint32_t>(stored), static_cast<uint32_t>(k)};
      std::memcpy(out, &h, sizeof h);
      return;
    }
  }
}

void Codec::decodeRange(const void* src, size_t begin, size_t end, size_t count, float* out, bool accumulate,
                        float alpha) {
  const uint8_t* in = static_cast<const uint8_t*>(src);
  switch (config_.kind) {
    case CodecKind::kFp16:
    case CodecKind::kBf16:
      castDecode(reinterpret_cast<const uint16_t*>(in) + begin, end - begin, out, config_.kind == CodecKind::kBf16,
                 accumulate, alpha);
      return;
    case CodecKind::kInt8:
    case CodecKind::kInt4:
      quantizeDecode(in, begin, end, count, config_.kind == CodecKind::kInt8 ? 8 : 4, config_.blockSize, out,
                     accumulate, alpha);
      return;
    case CodecKind::kSign: signDecode(in, begin, end, count, config_.blockSize, out, accumulate, alpha); return;
    case CodecKind::kTopK:
    case CodecKind::kTopKApprox: {
      TopKHeader h;
      std::memcpy(&h, in, sizeof h);
      const uint8_t* indices = in + 8;
      const uint8_t* values = in + 8 + 4 * static_cast<size_t>(h.capacity);
      if (!accumulate) std::memset(out, 0, (end - begin) * sizeof(float));
      for (uint32_t j = 0; j < h.stored; ++j) {
        uint32_t index;
        float value;
        std::memcpy(&index, indices + 4 * j, 4);
        std::memcpy(&value, values + 4 * j, 4);
        if (index < begin || index >= end) continue;
        float* o = out + (index - begin);
        *o = accumulate ? *o + alpha * value : value;
      }
      return;
    }
  }
}

ncclResult_t Codec::encode(const void* src, ncclDataType_t type, size_t count, void* dst, const EncodeContext& ctx) {
  WEFT_CHECK(checkCall(count, type, "encode"));
  if (count == 0) {
    if (isTopK(config_.kind)) std::memset(dst, 0, 8);
    return ncclSuccess;
  }
  if (type == ncclFloat32) {
    encodeRange(static_cast<const float*>(src), 0, count, count, dst, ctx);
    return ncclSuccess;
  }
  // Same narrow type: the cast is the identity.
  if ((config_.kind == CodecKind::kFp16 && type == ncclFloat16) ||
      (config_.kind == CodecKind::kBf16 && type == ncclBfloat16)) {
    std::memcpy(dst, src, count * 2);
    return ncclSuccess;
  }
  if (isTopK(config_.kind)) {
    if (whole_.size() < count) whole_.resize(count);
    toFloat(src, type, 0, count, whole_.data());
    encodeRange(whole_.data(), 0, count, count, dst, ctx);
    return ncclSuccess;
  }
  const size_t tile = tile_.size();
  for (size_t begin = 0; begin < count; begin += tile) {
    size_t n = std::min(tile, count - begin);
    toFloat(src, type, begin, n, tile_.data());
    encodeRange(tile_.data(), begin, begin + n, count, dst, ctx);
  }
  return ncclSuccess;
}

ncclResult_t Codec::decode(const void* src, size_t count, void* dst, ncclDataType_t type) {
  WEFT_CHECK(checkCall(count, type, "decode"));
  if (type == ncclFloat32) {
    decodeRange(src, 0, count, count, static_cast<float*>(dst), false, 1.0f);
    return ncclSuccess;
  }
  if ((config_.kind == CodecKind::kFp16 && type == ncclFloat16) ||
      (config_.kind == CodecKind::kBf16 && type == ncclBfloat16)) {
    std::memcpy(dst, src, count * 2);
    return ncclSuccess;
  }
  uint16_t* out = static_cast<uint16_t*>(dst);
  const bool bf16 = type == ncclBfloat16;
  if (isTopK(config_.kind)) {
    // Zeros, then the pairs.
    std::memset(out, 0, count * 2);
    TopKHeader h;
    std::memcpy(&h, src, sizeof h);
    const uint8_t* in = static_cast<const uint8_t*>(src);
    for (uint32_t j = 0; j < h.stored; ++j) {
      uint32_t index;
      float value;
      std::memcpy(&index, in + 8 + 4 * j, 4);
      std::memcpy(&value, in + 8 + 4 * static_cast<size_t>(h.capacity) + 4 * j, 4);
      if (index < count) floatToHalfArray(&value, 1, out + index, bf16);
    }
    return ncclSuccess;
  }
  const size_t tile = tile_.size();
  for (size_t begin = 0; begin < count; begin += tile) {
    size_t n = std::min(tile, count - begin);
    decodeRange(src, begin, begin + n, count, tile_.data(), false, 1.0f);
    floatToHalfArray(tile_.data(), n, out + begin, bf16);
  }
  return ncclSuccess;
}

ncclResult_t Codec::decodeAdd(const void* src, size_t count, float* acc, float alpha) {
  WEFT_CHECK(checkCall(count, ncclFloat32, "decodeAdd"));
  decodeRange(src, 0, count, count, acc, true, alpha);
  return ncclSuccess;
}

ncclResult_t Codec::reduceEncoded(const void* a, const void* b, size_t count, void* dst, const EncodeContext& ctx) {
  WEFT_CHECK(checkCall(count, ncclFloat32, "reduceEncoded"));
  if (!reducesEncoded())
    return fail(ncclInvalidUsage, "compression: codec %s cannot reduce in encoded form; decodeAdd instead",
                codecName(config_.kind));
  const size_t tile = tile_.size();
  for (size_t begin = 0; begin < count; begin += tile) {
    size_t n = std::min(tile, count - begin);
    decodeRange(a, begin, begin + n, count, tile_.data(), false, 1.0f);
    decodeRange(b, begin, begin + n, count, tile_.data(), true, 1.0f);
    encodeRange(tile_.data(), begin, begin + n, count, dst, ctx);
  }
  return ncclSuccess;
}

}  // namespace weft::compression
