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
  bool isDeviceMemory(const void* pointer) override;
  ncclResult_t allocatePinned(size_t bytes, void** out) override;
  void freePinned(void* pointer) override;
  ncclResult_t copyToHost(void* dst, const void* src, size_t bytes) override;
  ncclResult_t copyAsync(void* dst, const void* src, size_t bytes, cudaStream_t stream) override;
  ncclResult_t launchHostFunction(cudaStream_t stream, void (*function)(void*), void* argument) override;
  ncclResult_t waitValue(cudaStream_t stream, std::atomic<uint32_t>* flag, uint32_t value) override;
  ncclResult_t isCapturing(cudaStream_t stream, bool* capturing) override;

  // What a CUDA program would do with cudaMalloc, cudaStreamCreate and friends.
  void* allocateDevice(size_t bytes);
  void freeDevice(void* pointer);
  cudaStream_t createStream();
  void destroyStream(cudaStream_t stream);  // after synchronizing it
  // Waits until everything queued on `stream` so far is done (cudaStreamSynchronize).
  void synchronize(cudaStream_t stream);
  // Queues `work` on `stream`, like a kernel launch.
  void enqueue(cudaStream_t stream, std::function<void()> work);
  // Marks `stream` as capturing into a graph (cudaStreamBeginCapture), or not.
  void setCapturing(cudaStream_t stream, bool capturing);

 private:
  class Stream;
  Stream* streamOf(cudaStream_t stream);

  std::mutex mutex_;
  std::map<const char*, size_t> deviceAllocations_;  // start -> bytes
  std::vector<std::unique_ptr<Stream>> streams_;
  Stream* nullStream_ = nullptr;  // stream 0 (cudaStreamLegacy), created with the device
};

}  // namespace weft
