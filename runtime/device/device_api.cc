#include "runtime/device/device_api.h"

#include <sys/stat.h>
#include <unistd.h>

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

void thisProcessToken(uint64_t out[2]) {
  // A live process is named uniquely on the host by its PID namespace and its PID in it; asked
  // each time (no cache to go stale in a forked child, no lock a fork could leave held).
  struct stat pidNamespace {};
  out[0] = stat("/proc/self/ns/pid", &pidNamespace) == 0 ? static_cast<uint64_t>(pidNamespace.st_ino) : 0;
  out[1] = static_cast<uint64_t>(getpid());
}

int currentDeviceOrNone() {
  DeviceApi* api = deviceApi();
  int device = -1;
  if (api && api->currentDevice(&device) != ncclSuccess) device = -1;
  return device;
}

CurrentDeviceScope::CurrentDeviceScope(int device) : api_(deviceApi()) {
  if (!api_ || device < 0) return;
  int current = -1;
  result_ = api_->currentDevice(&current);
  if (result_ != ncclSuccess || current == device) return;
  result_ = api_->setCurrentDevice(device);
  if (result_ == ncclSuccess) previous_ = current;
}

CurrentDeviceScope::~CurrentDeviceScope() {
  if (previous_ >= 0) api_->setCurrentDevice(previous_);
}

ncclResult_t copyToHost(void* dst, const void* src, size_t bytes) {
  if (isDeviceMemory(src)) return deviceApi()->copyToHost(dst, src, bytes);
  memcpy(dst, src, bytes);
  return ncclSuccess;
}

}  // namespace weft
