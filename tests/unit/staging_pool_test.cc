// StagingPool (runtime/device/staging.h): which area a call gets, and that the pool never holds
// its lock across a device call. The second matters on a GPU only: cudaFreeHost (and maybe
// cudaHostAlloc) waits for the device, the device may be waiting for a stream's host function,
// and that host function releases an area under the pool's lock. The device below plays it:
// its allocation waits until another thread has released an area.
#include "runtime/device/staging.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "runtime/device/cpu_device.h"

namespace {

using weft::StagingArea;
using weft::StagingPool;

// Counts pinned allocations and frees; optionally starts `duringAllocation` on another thread
// inside each allocation and waits up to 10 s for it, as cudaFreeHost waits for the device while
// the device waits for a host function.
class CountingDevice : public weft::CpuDevice {
 public:
  ncclResult_t allocatePinned(size_t bytes, void** out) override {
    if (duringAllocation) {
      pending = std::async(std::launch::async, duringAllocation);
      // Not ready: the pool holds its lock here, and a GPU would hang. Go on, so that the test
      // fails instead of hanging; the pending release finishes once acquire returns.
      if (pending.wait_for(std::chrono::seconds(10)) != std::future_status::ready) stuck = true;
    }
    std::lock_guard<std::mutex> lock(mutex);
    ++allocations;
    return weft::CpuDevice::allocatePinned(bytes, out);
  }
  void freePinned(void* pointer) override {
    {
      std::lock_guard<std::mutex> lock(mutex);
      ++frees;
    }
    weft::CpuDevice::freePinned(pointer);
  }

  std::mutex mutex;
  int allocations = 0;
  int frees = 0;
  bool stuck = false;
  std::function<void()> duringAllocation;
  std::future<void> pending;
};

TEST(StagingPool, GivesTheSmallestFreeAreaThatFitsAndReusesIt) {
  CountingDevice device;
  StagingPool pool(&device);
  StagingArea *small = nullptr, *large = nullptr;
  ASSERT_EQ(pool.acquire(100, &small), ncclSuccess);
  ASSERT_EQ(pool.acquire(100000, &large), ncclSuccess);
  EXPECT_EQ(small->bytes, 4096u);    // at least a page
  EXPECT_EQ(large->bytes, 131072u);  // the next power of two
  EXPECT_NE(small->data, large->data);
  pool.release(small);
  pool.release(large);

  StagingArea* again = nullptr;
  ASSERT_EQ(pool.acquire(3000, &again), ncclSuccess);
  EXPECT_EQ(again, small);  // the smallest that fits, not the large one
  StagingArea* second = nullptr;
  ASSERT_EQ(pool.acquire(3000, &second), ncclSuccess);
  EXPECT_EQ(second, large);  // the small one is in use: the next that fits
  EXPECT_EQ(device.allocations, 2);
  pool.release(again);
  pool.release(second);
}

TEST(StagingPool, KeepsAnAreaTooSmallForLaterCallsInsteadOfFreeingIt) {
  CountingDevice device;
  {
    StagingPool pool(&device);
    StagingArea *small = nullptr, *grown = nullptr, *reused = nullptr;
    ASSERT_EQ(pool.acquire(4096, &small), ncclSuccess);
    pool.release(small);
    ASSERT_EQ(pool.acquire(1 << 20, &grown), ncclSuccess);
    EXPECT_NE(grown, small);
    EXPECT_EQ(device.frees, 0);  // nothing freed while calls are being enqueued
    pool.release(grown);
    ASSERT_EQ(pool.acquire(10, &reused), ncclSuccess);
    EXPECT_EQ(reused, small);
    pool.release(reused);
  }
  EXPECT_EQ(device.frees, 2);  // the destructor frees both
}

TEST(StagingPool, ReleasesProceedWhileAnAllocationWaits) {
  CountingDevice device;
  StagingPool pool(&device);
  StagingArea* held = nullptr;
  ASSERT_EQ(pool.acquire(4096, &held), ncclSuccess);
  // The next allocation (no free area fits) waits for a "host function" releasing `held`.
  device.duringAllocation = [&] { pool.release(held); };
  StagingArea* bigger = nullptr;
  ASSERT_EQ(pool.acquire(1 << 16, &bigger), ncclSuccess);
  device.pending.wait();
  EXPECT_FALSE(device.stuck) << "acquire held the pool's lock across the device's allocation";
  device.duringAllocation = nullptr;
  StagingArea* reused = nullptr;
  ASSERT_EQ(pool.acquire(100, &reused), ncclSuccess);
  EXPECT_EQ(reused, held);  // released during the allocation, and free again
  pool.release(reused);
  pool.release(bigger);
}

// A failed allocation leaves no half-made area behind for later calls.
class FailingDevice : public weft::CpuDevice {
 public:
  ncclResult_t allocatePinned(size_t bytes, void** out) override {
    if (fail) return ncclSystemError;
    return weft::CpuDevice::allocatePinned(bytes, out);
  }
  bool fail = true;
};

TEST(StagingPool, AFailedAllocationLeavesNoAreaBehind) {
  FailingDevice device;
  StagingPool pool(&device);
  StagingArea* area = nullptr;
  EXPECT_EQ(pool.acquire(4096, &area), ncclSystemError);
  device.fail = false;
  ASSERT_EQ(pool.acquire(4096, &area), ncclSuccess);
  ASSERT_NE(area->data, nullptr);
  EXPECT_EQ(area->bytes, 4096u);
  pool.release(area);
}

}  // namespace
