// The CPU implementation of the device seam (device_api.h): device memory is host memory that
// the device remembers allocating, a stream is an ordered queue of operations run by a thread
// of its own, and a stream wait blocks that thread until the flag reaches the value. It lets
// the suite run the stream-ordered collectives on every commit, without a GPU; the extra
// functions below are what a test needs to play the part of a CUDA program.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/device/device_api.h"

namespace weft {

class CpuDevice : public DeviceApi {
 public:
  CpuDevice();
  ~CpuDevice() override;

  const char* name() const override { return "cpu"; }
  // Device memory is what allocateDevice gave, pinned host memory what allocatePinned gave.
  MemoryKind memoryKind(const void* pointer) override;
  ncclResult_t allocatePinned(size_t bytes, void** out) override;
  void freePinned(void* pointer) override;
  ncclResult_t copyToHost(void* dst, const void* src, size_t bytes) override;
  ncclResult_t copyAsync(void* dst, const void* src, size_t bytes, cudaStream_t stream) override;
  ncclResult_t launchHostFunction(cudaStream_t stream, void (*function)(void*), void* argument) override;
  ncclResult_t waitValue(cudaStream_t stream, std::atomic<uint32_t>* flag, uint32_t value) override;
  ncclResult_t isCapturing(cudaStream_t stream, bool* capturing) override;
  // Each thread's current device starts at 0, as CUDA's does; there are deviceCount() of them.
  ncclResult_t currentDevice(int* device) override;
  ncclResult_t setCurrentDevice(int device) override;
  int deviceCount() override { return devices_.load(); }

  // Zero-filled here; ncclInvalidArgument when freeing anything else.
  ncclResult_t allocateDevice(size_t bytes, void** out) override;
  ncclResult_t freeDevice(void* pointer) override;

  // What a CUDA program would do with cudaStreamCreate and friends.
  cudaStream_t createStream();
  void destroyStream(cudaStream_t stream);  // after synchronizing it
  // Waits until everything queued on `stream` so far is done (cudaStreamSynchronize).
  void synchronize(cudaStream_t stream);
  // Queues `work` on `stream`, like a kernel launch.
  void enqueue(cudaStream_t stream, std::function<void()> work);
  // Marks `stream` as capturing into a graph (cudaStreamBeginCapture), or not.
  void setCapturing(cudaStream_t stream, bool capturing);
  // How many allocations of device memory are live (tests of freeing).
  size_t deviceAllocationCount();
  // How many devices the CPU device pretends to have (1 unless a test says otherwise).
  void setDeviceCount(int devices) { devices_.store(devices); }
  // The device that was current on the thread that launched the latest host function.
  int hostFunctionDevice() const { return hostFunctionDevice_.load(); }

 private:
  class Stream;
  Stream* streamOf(cudaStream_t stream);

  std::mutex mutex_;
  std::map<const char*, size_t> deviceAllocations_;  // start -> bytes
  std::map<const char*, size_t> pinnedAllocations_;
  std::vector<std::unique_ptr<Stream>> streams_;
  Stream* nullStream_ = nullptr;  // stream 0 (cudaStreamLegacy), created with the device
  std::atomic<int> devices_{1};
  std::atomic<int> hostFunctionDevice_{-1};
};

}  // namespace weft
