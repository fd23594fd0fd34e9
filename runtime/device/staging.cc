#include "runtime/device/staging.h"

#include <algorithm>
#include <bit>

#include "common/status.h"

namespace weft {

StagingPool::~StagingPool() {
  for (auto& area : areas_) device_->freePinned(area->data);
}

ncclResult_t StagingPool::acquire(size_t bytes, StagingArea** out) {
  std::lock_guard<std::mutex> lock(mutex_);
  StagingArea* best = nullptr;
  StagingArea* spare = nullptr;
  for (auto& area : areas_) {
    if (area->inUse) continue;
    if (area->bytes >= bytes && (!best || area->bytes < best->bytes)) best = area.get();
    if (area->bytes < bytes) spare = area.get();
  }
  if (!best) {
    const size_t size = std::bit_ceil(std::max<size_t>(bytes, 4096));
    void* data = nullptr;
    WEFT_CHECK(device_->allocatePinned(size, &data));
    if (spare) {  // a free area too small for today's calls: replace it rather than keep both
      device_->freePinned(spare->data);
      best = spare;
    } else {
      areas_.push_back(std::make_unique<StagingArea>());
      best = areas_.back().get();
    }
    best->data = static_cast<char*>(data);
    best->bytes = size;
  }
  best->inUse = true;
  *out = best;
  return ncclSuccess;
}

void StagingPool::release(StagingArea* area) {
  std::lock_guard<std::mutex> lock(mutex_);
  area->inUse = false;
}

}  // namespace weft
