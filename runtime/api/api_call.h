// The C API boundary: every exported entry point that returns ncclResult_t runs its body
// through apiCall, so that an exception (std::bad_alloc from a huge allocation, anything else
// the standard library throws) becomes an error code and a message for ncclGetLastError
// instead of unwinding into the caller's C code and aborting the process.
#pragma once

#include "nccl.h"

namespace weft {

// For use inside a catch block: records the exception in flight as this thread's last error
// and returns ncclSystemError for std::bad_alloc, ncclInternalError for anything else.
ncclResult_t failFromException(const char* function) noexcept;

template <typename Body>
ncclResult_t apiCall(const char* function, Body&& body) noexcept {
  try {
    return body();
  } catch (...) {
    return failFromException(function);
  }
}

}  // namespace weft
