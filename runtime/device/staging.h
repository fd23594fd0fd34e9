// Pinned host memory that device-memory calls are staged through: the stream copies a call's
// device inputs into an area, the progress thread runs the collective on the area, and the
// stream copies the results back. A batch holds its area until the stream has copied the
// results out; areas are reused, never allocated per call once the sizes repeat.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/device/device_api.h"

namespace weft {

struct StagingArea {
  char* data = nullptr;
  size_t bytes = 0;
  bool inUse = false;
};

class StagingPool {
 public:
  explicit StagingPool(DeviceApi* device) : device_(device) {}
  ~StagingPool();  // every area must have been released
  StagingPool(const StagingPool&) = delete;
  StagingPool& operator=(const StagingPool&) = delete;

  // A free area of at least `bytes`: the smallest that fits, else a new one (sizes rounded up
  // to a power of two, so that a growing workload settles quickly). Makes no CUDA call while
  // it holds the pool's lock; never frees an area (the destructor does).
  ncclResult_t acquire(size_t bytes, StagingArea** out);
  // Returns an area; callable from a stream's host function (no CUDA call, no waiting).
  void release(StagingArea* area);

 private:
  DeviceApi* device_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<StagingArea>> areas_;
};

}  // namespace weft
