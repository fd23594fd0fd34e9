#include "common/status.h"

#include <cstdarg>
#include <cstdio>

#include "common/log.h"

namespace weft {

namespace {
thread_local std::string threadLastError;
}

ncclResult_t fail(ncclResult_t result, const char* format, ...) {
  char buffer[1024];
  va_list args;
  va_start(args, format);
  vsnprintf(buffer, sizeof(buffer), format, args);
  va_end(args);
  threadLastError = buffer;
  WEFT_WARN("%s", buffer);
  return result;
}

const std::string& lastErrorMessage() { return threadLastError; }

void clearLastError() { threadLastError.clear(); }

void restoreLastError(const std::string& message) { threadLastError = message; }

}  // namespace weft
