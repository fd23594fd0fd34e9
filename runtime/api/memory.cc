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

// The device API when a device is there to allocate on.
DeviceApi* allocatingDevice() {
  DeviceApi* device = deviceApi();
  return device && device->deviceCount() > 0 ? device : nullptr;
}

}  // namespace

WEFT_API ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  return apiCall("ncclMemAlloc", [&]() -> ncclResult_t {
    DeviceApi* device = allocatingDevice();
    if (!device) return sharedAlloc(ptr, size);
    if (!ptr) return fail(ncclInvalidArgument, "ncclMemAlloc: ptr is NULL");
    if (size == 0) return fail(ncclInvalidArgument, "ncclMemAlloc: size is 0");
    return device->allocateDevice(size, ptr);
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
  return apiCall("weftMemAllocHost", [&]() -> ncclResult_t { return sharedAlloc(ptr, size); });
}
