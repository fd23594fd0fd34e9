// ncclMemAlloc/ncclMemFree: device memory on the current device when there is a device (CUDA, or
// a test's CPU device), as NCCL's; host memory in shared segments that same-host peers can map
// otherwise, and from weftMemAllocHost always (the direct all-reduce's buffers).
#include "common/status.h"
#include "nccl.h"
#include "runtime/api/api_call.h"
#include "runtime/api/export.h"
#include "runtime/device/device_api.h"
#include "transport/shm/shared_memory_pool.h"
#include "weft/weft.h"

using namespace weft;

namespace {

// Both allocation calls' arguments, named after the call.
ncclResult_t checkAllocation(const char* function, void** ptr, size_t size) {
  if (!ptr) return fail(ncclInvalidArgument, "%s: ptr is NULL", function);
  if (size == 0) return fail(ncclInvalidArgument, "%s: size is 0", function);
  return ncclSuccess;
}

// The device API when a device is there to allocate on.
DeviceApi* allocatingDevice() {
  DeviceApi* device = deviceApi();
  return device && device->deviceCount() > 0 ? device : nullptr;
}

}  // namespace

WEFT_API ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  return apiCall("ncclMemAlloc", [&]() -> ncclResult_t {
    WEFT_CHECK(checkAllocation("ncclMemAlloc", ptr, size));
    DeviceApi* device = allocatingDevice();
    return device ? device->allocateDevice(size, ptr) : sharedAlloc(ptr, size);
  });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclMemAlloc, void** ptr, size_t size);

WEFT_API ncclResult_t ncclMemFree(void* ptr) {
  return apiCall("ncclMemFree", [&]() -> ncclResult_t {
    if (ptr && isDeviceMemory(ptr)) return deviceApi()->freeDevice(ptr);
    return sharedFree(ptr);
  });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclMemFree, void* ptr);

WEFT_API ncclResult_t weftMemAllocHost(void** ptr, size_t size) {
  return apiCall("weftMemAllocHost", [&]() -> ncclResult_t {
    WEFT_CHECK(checkAllocation("weftMemAllocHost", ptr, size));
    return sharedAlloc(ptr, size);
  });
}
