// WEFT_COMPRESSION: the environment opt-in to compressed all-reduce, parsed once per
// communicator, and what a communicator keeps for compressed calls (codecs, error-feedback
// residuals per buffer; their prepared schedules are in the communicator's plan cache).
//
//   WEFT_COMPRESSION=fp16|bf16|int8|int4|sign|topk:RATIO[,ef][,min_bytes=N]     (or off)
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "compression/codec.h"
#include "nccl.h"

namespace weft {

struct CompressionConfig {
  bool enabled = false;
  compression::CodecConfig codec;
  bool errorFeedback = false;
  size_t minBytes = 0;  // smaller calls stay exact
};

// The valid forms, for error messages.
extern const char* const kCompressionForms;

// Parses a WEFT_COMPRESSION value; ncclInvalidArgument naming the valid forms when it is wrong.
ncclResult_t parseCompressionConfig(const char* text, CompressionConfig* out);
// Reads WEFT_COMPRESSION (unset: disabled).
ncclResult_t compressionConfigFromEnv(CompressionConfig* out);

bool sameCodecConfig(const compression::CodecConfig& a, const compression::CodecConfig& b);

// Per communicator; used only by the thread running the communicator's collectives.
struct CommCompression {
  CompressionConfig env;
  struct CodecEntry {
    compression::CodecConfig config;
    size_t slotBytes = 0;
    std::unique_ptr<compression::Codec> codec;
  };
  std::vector<CodecEntry> codecs;
  // WEFT_COMPRESSION with ",ef": residual per (send buffer address, count).
  std::map<std::pair<uintptr_t, size_t>, std::vector<float>> feedback;
};

}  // namespace weft
