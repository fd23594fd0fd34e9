// The CPU implementation of the device seam (device_api.h): device memory is host memory that
// the device remembers allocating (a shared segment of its own, which a peer process maps as
// it would import a CUDA IPC handle), a stream is an ordered queue of operations run by a thread
// of its own, a kernel is a function queued on one, and a stream wait blocks that thread until
// the flag reaches the value. It lets
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
#include "transport/shm/shared_memory_pool.h"

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
  ncclResult_t copy2DAsync(void* dst, size_t dstPitch, const void* src, size_t srcPitch, size_t width, size_t rows,
                           cudaStream_t stream) override;
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
  // Device memory that cannot be exported, as cudaMalloc's cannot on CUDA (a PyTorch-style
  // caching allocator's); zero-filled, freed by freeDevice.
  ncclResult_t allocatePlainDevice(size_t bytes, void** out);

  bool exportDeviceBuffer(const void* pointer, size_t bytes, DeviceBufferExport* out) override;
  // Maps the peer's segment even where the peer is this process (the path CUDA's import takes
  // for other processes), once per segment (the mapper's cache).
  ncclResult_t importDeviceBuffer(const DeviceBufferExport& buffer, double timeoutSeconds, char** out) override;
  // Unmaps the segments whose owners have freed them (the mapper learns it from each segment's
  // release page); the rest stay mapped for other communicators.
  void releaseDeviceBuffer(const DeviceBufferExport&, char*) override { peerBuffers_.releaseFreed(); }
  ncclResult_t createWorkStream(cudaStream_t* out) override;
  void destroyWorkStream(cudaStream_t stream) override { destroyStream(stream); }
  ncclResult_t synchronizeStream(cudaStream_t stream) override;
  ncclResult_t reduceAsync(void* dst, const void* a, const void* b, size_t count, ncclDataType_t type, ReduceOp op,
                           cudaStream_t stream) override;
  ncclResult_t divideAsync(void* dst, const void* src, size_t count, ncclDataType_t type, uint64_t divisor,
                           cudaStream_t stream) override;

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
  // Whether exportDeviceBuffer shares buffers (true unless a test plays a device whose memory
  // cannot be exported, or a sandbox that refuses CUDA IPC).
  void setExportable(bool exportable) { exportable_.store(exportable); }
  // Whether importDeviceBuffer maps peers' buffers (true unless a test plays a process that
  // cannot map them: a sandbox, a device that cannot reach the peer's).
  void setImportable(bool importable) { importable_.store(importable); }
  // Kernels (reduceAsync, divideAsync) launched, and peer buffers imported, so far (tests of
  // which data path ran).
  uint64_t kernelLaunches() const { return kernelLaunches_.load(); }
  uint64_t imports() const { return imports_.load(); }
  // Stream waits on a flag enqueued so far: one per stream of each batch (tests of how calls
  // were batched).
  uint64_t flagWaits() const { return flagWaits_.load(); }
  // Stream copies (copyAsync, copy2DAsync: one each) enqueued so far.
  uint64_t streamCopies() const { return streamCopies_.load(); }
  // Of those, the 2-D ones (strided slices' and pieces' blocks).
  uint64_t streamCopies2D() const { return streamCopies2D_.load(); }

 private:
  class Stream;
  Stream* streamOf(cudaStream_t stream);
  // Frees device memory of either kind (allocateDevice's segment, allocatePlainDevice's).
  static ncclResult_t releaseDeviceMemory(void* pointer);

  std::mutex mutex_;
  std::map<const char*, size_t> deviceAllocations_;  // start -> bytes
  std::map<const char*, size_t> pinnedAllocations_;
  std::vector<std::unique_ptr<Stream>> streams_;
  Stream* nullStream_ = nullptr;  // stream 0 (cudaStreamLegacy), created with the device
  std::atomic<int> devices_{1};
  std::atomic<int> hostFunctionDevice_{-1};
  std::atomic<bool> exportable_{true};
  std::atomic<bool> importable_{true};
  std::atomic<uint64_t> kernelLaunches_{0};
  std::atomic<uint64_t> imports_{0};
  std::atomic<uint64_t> flagWaits_{0};
  std::atomic<uint64_t> streamCopies_{0};
  std::atomic<uint64_t> streamCopies2D_{0};
  PeerBufferMapper peerBuffers_;  // what importDeviceBuffer mapped
};

}  // namespace weft
