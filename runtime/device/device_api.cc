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

MemoryKind memoryKind(const void* pointer) {
  DeviceApi* api = deviceApi();
  return pointer && api ? api->memoryKind(pointer) : MemoryKind::Host;
}

CurrentDeviceScope::CurrentDeviceScope(int device) {
  DeviceApi* api = deviceApi();
  if (!api || device < 0) return;
  int current = -1;
  if (api->currentDevice(&current) != ncclSuccess || current == device) return;
  result_ = api->setCurrentDevice(device);
  if (result_ == ncclSuccess) previous_ = current;
}

CurrentDeviceScope::~CurrentDeviceScope() {
  if (previous_ >= 0) deviceApi()->setCurrentDevice(previous_);
}

ncclResult_t copyToHost(void* dst, const void* src, size_t bytes) {
  if (isDeviceMemory(src)) return deviceApi()->copyToHost(dst, src, bytes);
  memcpy(dst, src, bytes);
  return ncclSuccess;
}

}  // namespace weft
