// Buffer registration (ncclCommRegister) and memory windows (ncclCommWindowRegister). Host
// transports gain nothing from registering ordinary memory: shared-memory peers can only read
// buffers that live in a shared segment, which is what ncclMemAlloc provides without a GPU and
// weftMemAllocHost always (and what the direct all-reduce looks for by address, registered or
// not). The handles are real, checked on release, and owned by their communicator.
#include <memory>

#include "common/status.h"
#include "nccl.h"
#include "runtime/api/api_call.h"
#include "runtime/api/export.h"
#include "runtime/comm/communicator.h"

using namespace weft;

namespace {

ncclResult_t checkRegion(ncclComm_t comm, void* buff, size_t size, const void* out, const char* function) {
  WEFT_CHECK(checkCommunicator(comm));
  if (!buff) return fail(ncclInvalidArgument, "%s: buff is NULL", function);
  if (size == 0) return fail(ncclInvalidArgument, "%s: size is 0", function);
  if (!out) return fail(ncclInvalidArgument, "%s: the output handle pointer is NULL", function);
  return ncclSuccess;
}

ncclResult_t addRegistration(ncclComm_t comm, void* buff, size_t size, bool window, RegisteredRegion** out) {
  auto region = std::make_unique<RegisteredRegion>(RegisteredRegion{buff, size, window});
  *out = region.get();
  std::lock_guard<std::mutex> lock(comm->registered.mutex);
  comm->registered.regions.push_back(std::move(region));
  return ncclSuccess;
}

ncclResult_t removeRegistration(ncclComm_t comm, const void* handle, bool window, const char* function) {
  WEFT_CHECK(checkCommunicator(comm));
  std::lock_guard<std::mutex> lock(comm->registered.mutex);
  for (auto it = comm->registered.regions.begin(); it != comm->registered.regions.end(); ++it)
    if (it->get() == handle && (*it)->window == window) {
      comm->registered.regions.erase(it);
      return ncclSuccess;
    }
  return fail(ncclInvalidArgument, "%s: handle %p was not registered on this comm (or was already released)", function,
              handle);
}

}  // namespace

WEFT_API ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  return apiCall("ncclCommRegister", [&]() -> ncclResult_t {
    WEFT_CHECK(checkRegion(comm, buff, size, handle, "ncclCommRegister"));
    RegisteredRegion* region = nullptr;
    WEFT_CHECK(addRegistration(comm, buff, size, false, &region));
    *handle = region;
    return ncclSuccess;
  });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size, void** handle);

WEFT_API ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  return apiCall("ncclCommDeregister",
                 [&]() -> ncclResult_t { return removeRegistration(comm, handle, false, "ncclCommDeregister"); });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* handle);

WEFT_API ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                             int winFlags) {
  return apiCall("ncclCommWindowRegister", [&]() -> ncclResult_t {
    WEFT_CHECK(checkRegion(comm, buff, size, win, "ncclCommWindowRegister"));
    if (winFlags != NCCL_WIN_DEFAULT && winFlags != NCCL_WIN_COLL_SYMMETRIC)
      return fail(ncclInvalidArgument, "ncclCommWindowRegister: winFlags=%d is not a known flag", winFlags);
    RegisteredRegion* region = nullptr;
    WEFT_CHECK(addRegistration(comm, buff, size, true, &region));
    *win = reinterpret_cast<ncclWindow_t>(region);
    return ncclSuccess;
  });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                     int winFlags);

WEFT_API ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  return apiCall("ncclCommWindowDeregister",
                 [&]() -> ncclResult_t { return removeRegistration(comm, win, true, "ncclCommWindowDeregister"); });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win);
