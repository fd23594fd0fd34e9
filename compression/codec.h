// The codec front end: one object per (configuration, maximum chunk size), used by the
// compressed collectives chunk by chunk.
//
//   Codec::create(config, maxCount, &codec)          sizes all scratch once
//   codec->encodedBytes(count)                       bytes of one encoded chunk
//   codec->encode(src, type, count, dst, ctx)        src: float32 / float16 / bfloat16
//   codec->decode(src, count, dst, type)             to any of the three types
//   codec->decodeAdd(src, count, acc, alpha)         acc += alpha * decode(src), float acc
//   codec->reduceEncoded(a, b, count, dst, ctx)      dst = encode(decode(a) + decode(b))
//                                                    (casts and int8/int4; see reducesEncoded)
//
// Calls do not allocate (except the first top-k encode of a float16/bfloat16 chunk, which
// grows a conversion buffer once). A Codec is not thread-safe: use one per thread/stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "compression/topk.h"
#include "compression/types.h"
#include "nccl.h"

namespace weft::compression {

class Codec {
 public:
  static ncclResult_t create(const CodecConfig& config, size_t maxCount, std::unique_ptr<Codec>* out);
  // Checks a configuration; the reason goes to weft::fail / ncclGetLastError.
  static ncclResult_t validate(const CodecConfig& config);

  const CodecConfig& config() const { return config_; }
  size_t maxCount() const { return maxCount_; }
  size_t encodedBytes(size_t count) const { return compression::encodedBytes(config_, count); }
  bool reducesEncoded() const;
  // Elements a range passed to encodeRange/decodeRange must start at a multiple of: the block
  // size for block codecs, 1 for casts, 0 for top-k (whole chunks only).
  size_t granule() const;

  ncclResult_t encode(const void* src, ncclDataType_t type, size_t count, void* dst, const EncodeContext& ctx);
  ncclResult_t decode(const void* src, size_t count, void* dst, ncclDataType_t type);
  ncclResult_t decodeAdd(const void* src, size_t count, float* acc, float alpha = 1.0f);
  ncclResult_t reduceEncoded(const void* a, const void* b, size_t count, void* dst, const EncodeContext& ctx);

  // Float kernels on [begin, end) of a chunk of `count` (x/out point at element begin).
  void encodeRange(const float* x, size_t begin, size_t end, size_t count, void* dst, const EncodeContext& ctx);
  void decodeRange(const void* src, size_t begin, size_t end, size_t count, float* out, bool accumulate, float alpha);

  // Elements per conversion tile (a multiple of the block size).
  size_t tileElements() const { return tile_.size(); }

 private:
  Codec(const CodecConfig& config, size_t maxCount);
  ncclResult_t checkCall(size_t count, ncclDataType_t type, const char* what) const;

  CodecConfig config_;
  size_t maxCount_;
  std::vector<float> tile_;
  std::vector<float> whole_;  // top-k of fp16/bf16 input: the chunk as float
  std::unique_ptr<TopKSelector> topk_;
};

}  // namespace weft::compression
