#include "runtime/comm/compression_config.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/settings.h"
#include "common/status.h"

namespace weft {

const char* const kCompressionForms =
    "fp16, bf16, int8, int4, sign or topk:RATIO (0 < RATIO <= 1), optionally followed by ,ef (error feedback) "
    "and ,min_bytes=N (smaller calls stay exact); or off";

namespace {

ncclResult_t invalid(const char* text, const std::string& why) {
  return fail(ncclInvalidArgument, "WEFT_COMPRESSION=%s: %s; valid forms: %s", text, why.c_str(), kCompressionForms);
}

}  // namespace

ncclResult_t parseCompressionConfig(const char* text, CompressionConfig* out) {
  CompressionConfig config;
  std::string value = text ? text : "";
  if (value.empty() || value == "off" || value == "none" || value == "0") {
    *out = config;
    return ncclSuccess;
  }
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    size_t comma = value.find(',', start);
    parts.push_back(value.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  const std::string& codec = parts[0];
  if (codec.rfind("topk:", 0) == 0) {
    std::string ratio = codec.substr(5);
    char* end = nullptr;
    errno = 0;
    double r = ratio.empty() ? 0.0 : strtod(ratio.c_str(), &end);
    if (ratio.empty() || errno || *end != '\0' || !(r > 0.0 && r <= 1.0))
      return invalid(text, "top-k ratio '" + ratio + "' is not a number in (0, 1]");
    config.codec.kind = compression::CodecKind::kTopK;
    config.codec.topkRatio = r;
  } else if (codec == "fp16" || codec == "bf16" || codec == "int8" || codec == "int4" || codec == "sign") {
    compression::parseCodecKind(codec.c_str(), &config.codec.kind);
  } else {
    return invalid(text, "unknown codec '" + codec + "'");
  }
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string& option = parts[i];
    if (option == "ef") {
      config.errorFeedback = true;
    } else if (option.rfind("min_bytes=", 0) == 0) {
      std::string number = option.substr(10);
      char* end = nullptr;
      errno = 0;
      unsigned long long bytes = number.empty() || number[0] == '-' ? 0 : strtoull(number.c_str(), &end, 10);
      if (number.empty() || number[0] == '-' || errno || *end != '\0')
        return invalid(text, "min_bytes '" + number + "' is not a non-negative integer");
      config.minBytes = static_cast<size_t>(bytes);
    } else {
      return invalid(text, "unknown option '" + option + "'");
    }
  }
  config.enabled = true;
  *out = config;
  return ncclSuccess;
}

ncclResult_t compressionConfigFromEnv(CompressionConfig* out) {
  auto value = settingString(Setting::WeftCompression);
  return parseCompressionConfig(value ? value->c_str() : nullptr, out);
}

bool sameCodecConfig(const compression::CodecConfig& a, const compression::CodecConfig& b) {
  return a.kind == b.kind && a.blockSize == b.blockSize && a.rounding == b.rounding && a.topkRatio == b.topkRatio &&
         a.topkOversample == b.topkOversample && a.topkSampleSize == b.topkSampleSize;
}

}  // namespace weft
