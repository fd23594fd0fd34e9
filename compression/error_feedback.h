// Error feedback: per gradient buffer, the part of each value that compression dropped is
// kept and added to the next gradient before it is encoded, so nothing is lost over time:
//
//   c = residual + grad;   sent = decode(encode(c));   residual = c - sent
//
// so sum(sent) + residual == sum(grad) + old residual, up to float rounding. The residual is
// float32 for every gradient type and is allocated (zeroed, pre-faulted) once.
#pragma once

#include <cstddef>
#include <vector>

#include "compression/codec.h"

namespace weft::compression {

class ErrorFeedback {
 public:
  explicit ErrorFeedback(size_t count);

  size_t size() const { return residual_.size(); }
  const float* residual() const { return residual_.data(); }
  float* residual() { return residual_.data(); }
  void reset();

  // Encodes grad (elements [offset, offset + count) of this buffer) with feedback into dst
  // (codec.encodedBytes(count) bytes). ctx.firstIndex is the chunk's global index as usual.
  ncclResult_t encode(Codec& codec, const void* grad, ncclDataType_t type, size_t offset, size_t count, void* dst,
                      const EncodeContext& ctx);

 private:
  std::vector<float> residual_;
};

}  // namespace weft::compression
