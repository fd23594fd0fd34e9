// The CUDA implementation of the device seam (device_api.h), present when weft is built with
// CUDA: each function is one runtime call, plus the driver's stream memory operations
// (cuStreamWaitValue32), reached through cudaGetDriverEntryPointByVersion so that weft never
// links libcuda and still loads on machines without a driver.
#pragma once

#include "runtime/device/device_api.h"

namespace weft {

// The CUDA device API when a CUDA device is present, else null (asked once per process).
DeviceApi* cudaDeviceApi();

}  // namespace weft
