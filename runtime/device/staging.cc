#include "runtime/device/staging.h"

#include <algorithm>
#include <bit>

#include "common/status.h"

namespace weft {

StagingPool::~StagingPool() {
  for (auto& area : areas_) device_->freePinned(area->data);
}

ncclResult_t StagingPool::acquire(size_t bytes, StagingArea** out) {
  StagingArea* fresh = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    StagingArea* best = nullptr;
    for (auto& area : areas_)
      if (!area->inUse && area->bytes >= bytes && (!best || area->bytes < best->bytes)) best = area.get();
    if (best) {
      best->inUse = true;
      *out = best;
      return ncclSuccess;
    }
    // None fits: a new area, reserved here and allocated below, outside the lock.
    areas_.push_back(std::make_unique<StagingArea>());
    fresh = areas_.back().get();
    fresh->inUse = true;
  }
  // No CUDA call under the lock: release() takes it from a stream's host function, and a CUDA
  // call that waits for the device (cudaFreeHost does; cudaHostAlloc may) would then wait for a
  // host function that waits for the lock. For the same reason an area too small for today's
  // calls is kept, not freed here: smaller calls use it, and ~StagingPool frees it.
  const size_t size = std::bit_ceil(std::max<size_t>(bytes, 4096));
  void* data = nullptr;
  const ncclResult_t result = device_->allocatePinned(size, &data);
  std::lock_guard<std::mutex> lock(mutex_);
  if (result != ncclSuccess) {
    std::erase_if(areas_, [&](const std::unique_ptr<StagingArea>& area) { return area.get() == fresh; });
    return result;
  }
  fresh->data = static_cast<char*>(data);
  fresh->bytes = size;
  *out = fresh;
  return ncclSuccess;
}

void StagingPool::release(StagingArea* area) {
  std::lock_guard<std::mutex> lock(mutex_);
  area->inUse = false;
}

}  // namespace weft
