#include "runtime/device/device_api.h"

#include <cstring>

#include "runtime/device/cuda_device.h"

namespace weft {

namespace {
std::atomic<DeviceApi*> installedApi{nullptr};
}  // namespace

DeviceApi* deviceApi() {
  if (DeviceApi* installed = installedApi.load(std::memory_order_acquire)) return installed;
  return cudaDeviceApi();
}

void installDeviceApi(DeviceApi* api) { installedApi.store(api, std::memory_order_release); }

bool isDeviceMemory(const void* pointer) {
  DeviceApi* api = deviceApi();
  return pointer && api && api->isDeviceMemory(pointer);
}

ncclResult_t copyToHost(void* dst, const void* src, size_t bytes) {
  if (isDeviceMemory(src)) return deviceApi()->copyToHost(dst, src, bytes);
  memcpy(dst, src, bytes);
  return ncclSuccess;
}

}  // namespace weft
