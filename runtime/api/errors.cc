// Version, error strings, last-error text and logging reset.
#include <cstring>

#include "common/log.h"
#include "common/status.h"
#include "nccl.h"
#include "runtime/api/api_call.h"
#include "runtime/api/export.h"
#include "runtime/comm/communicator.h"
#include "weft/weft.h"

using namespace weft;

WEFT_API ncclResult_t ncclGetVersion(int* version) {
  return apiCall("ncclGetVersion", [&]() -> ncclResult_t {
    if (!version) return fail(ncclInvalidArgument, "ncclGetVersion: version is NULL");
    *version = NCCL_VERSION_CODE;
    WEFT_LOG(LogLevel::Version, kLogInit, "weft %s (NCCL %d.%d.%d API)", weftVersionString(), NCCL_MAJOR, NCCL_MINOR,
             NCCL_PATCH);
    return ncclSuccess;
  });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclGetVersion, int* version);

WEFT_API ncclResult_t weftGetVersion(int* version) {
  return apiCall("weftGetVersion", [&]() -> ncclResult_t {
    if (!version) return fail(ncclInvalidArgument, "weftGetVersion: version is NULL");
    *version = WEFT_VERSION_MAJOR * 10000 + WEFT_VERSION_MINOR * 100 + WEFT_VERSION_PATCH;
    return ncclSuccess;
  });
}

#define WEFT_STRINGIFY2(x) #x
#define WEFT_STRINGIFY(x) WEFT_STRINGIFY2(x)
WEFT_API const char* weftVersionString(void) {
  return WEFT_STRINGIFY(WEFT_VERSION_MAJOR) "." WEFT_STRINGIFY(WEFT_VERSION_MINOR) "." WEFT_STRINGIFY(
      WEFT_VERSION_PATCH);
}

WEFT_API const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the weft developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}
WEFT_PROFILING_ALIAS(const char*, ncclGetErrorString, ncclResult_t result);

WEFT_API const char* ncclGetLastError(ncclComm_t comm) {
  // NCCL keeps one message per process; weft keeps the calling thread's, which is the one the
  // caller means when ranks are threads. A failed communicator's own message is the fallback.
  return apiCallOr("ncclGetLastError", "ncclGetLastError: out of memory while copying the message", [&] {
    const std::string& mine = lastErrorMessage();
    if (!mine.empty() || !comm || comm->magic != kCommMagic) return mine.c_str();
    thread_local std::string commMessage;
    std::lock_guard<std::mutex> lock(comm->state.errorMutex);
    commMessage = comm->state.lastError;
    return commMessage.c_str();
  });
}
WEFT_PROFILING_ALIAS(const char*, ncclGetLastError, ncclComm_t comm);

WEFT_API void ncclResetDebugInit(void) {
  apiCallVoid("ncclResetDebugInit", [] { resetLogConfig(); });
}
WEFT_PROFILING_ALIAS(void, ncclResetDebugInit, void);
