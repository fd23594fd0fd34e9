// The C API boundary: every exported entry point runs its body through apiCall (those that
// return ncclResult_t) or apiCallOr / apiCallVoid (the others), so that an exception
// (std::bad_alloc from a huge allocation, anything else the standard library throws) becomes an
// error code and a message for ncclGetLastError instead of unwinding into the caller's C code and
// aborting the process.
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

// For entry points that return something other than ncclResult_t (a message, a count, a value
// struct): an exception is recorded as the last error, and `fallback` returned.
template <typename T, typename Body>
T apiCallOr(const char* function, T fallback, Body&& body) noexcept {
  try {
    return body();
  } catch (...) {
    failFromException(function);
    return fallback;
  }
}

template <typename Body>
void apiCallVoid(const char* function, Body&& body) noexcept {
  try {
    body();
  } catch (...) {
    failFromException(function);
  }
}

}  // namespace weft
