// WEFT_COMPRESSION's value (codec, options, min_bytes, ...).
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/comm/compression_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);  // NUL-terminated by c_str()
  weft::CompressionConfig config;
  (void)weft::parseCompressionConfig(text.c_str(), &config);
  return 0;
}
