#include "common/env.h"

#include <cerrno>
#include <cstdlib>

#include "common/log.h"

namespace weft {

std::optional<std::string> envString(const char* name) {
  const char* value = getenv(name);
  if (!value || !*value) return std::nullopt;
  WEFT_INFO(kLogEnv, "%s set by environment to %s", name, value);
  return std::string(value);
}

int64_t envInt(const char* name, int64_t defaultValue) {
  const char* value = getenv(name);
  if (!value || !*value) return defaultValue;
  char* end = nullptr;
  errno = 0;
  long long parsed = strtoll(value, &end, 0);
  if (errno || end == value || *end) {
    WEFT_WARN("Invalid value %s for %s, using default %lld", value, name, static_cast<long long>(defaultValue));
    return defaultValue;
  }
  WEFT_INFO(kLogEnv, "%s set by environment to %lld", name, parsed);
  return parsed;
}

double envDouble(const char* name, double defaultValue) {
  const char* value = getenv(name);
  if (!value || !*value) return defaultValue;
  char* end = nullptr;
  double parsed = strtod(value, &end);
  if (end == value || *end || parsed != parsed) {
    WEFT_WARN("Invalid value %s for %s, using default %g", value, name, defaultValue);
    return defaultValue;
  }
  return parsed;
}

double timeoutSeconds() {
  double seconds = envDouble("WEFT_TIMEOUT", 300.0);
  return seconds > 0 ? seconds : 300.0;
}

}  // namespace weft
