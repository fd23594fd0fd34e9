#include "runtime/api/api_call.h"

#include <exception>
#include <new>

#include "common/status.h"

namespace weft {

ncclResult_t failFromException(const char* function) noexcept {
  ncclResult_t result = ncclInternalError;
  try {
    try {
      throw;
    } catch (const std::bad_alloc&) {
      result = ncclSystemError;
      fail(result, "%s: out of memory (std::bad_alloc)", function);
    } catch (const std::exception& e) {
      fail(result, "%s: internal error: %s", function, e.what());
    } catch (...) {
      fail(result, "%s: internal error: unknown exception", function);
    }
  } catch (...) {
    // Recording the message failed too (no memory left for it): the code still tells.
  }
  return result;
}

}  // namespace weft
