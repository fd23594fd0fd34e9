// Error reporting: every failure returns an ncclResult_t and records a message that
// ncclGetLastError returns. Messages are kept per thread (the call that failed) and, by the
// runtime, per communicator.
#pragma once

#include <string>

#include "nccl.h"

namespace weft {

// Records `message` as this thread's last error and logs it at WARN; returns `result` so
// callers can write `return fail(ncclInvalidArgument, "...")`.
ncclResult_t fail(ncclResult_t result, const char* format, ...) __attribute__((format(printf, 2, 3)));

// The last message recorded on this thread ("" when none).
const std::string& lastErrorMessage();
void clearLastError();
// Puts back a message saved with lastErrorMessage(): for work on the side (a dump asked for)
// whose failure is logged but must not become the caller's error.
void restoreLastError(const std::string& message);

}  // namespace weft

// Propagates a failing ncclResult_t to the caller.
#define WEFT_CHECK(expr)                                              \
  do {                                                                \
    ncclResult_t weft_check_result_ = (expr);                         \
    if (weft_check_result_ != ncclSuccess) return weft_check_result_; \
  } while (0)
