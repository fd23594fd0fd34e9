// The seam between the runtime and CUDA: every CUDA call the stream-ordered path makes goes
// through this small interface. The CUDA implementation (cuda_device.cc) is thin; the CPU
// implementation (cpu_device.h) emulates device memory with host memory and streams with
// ordered queues on threads, so that the whole stream-ordered path (queueing, progress,
// completion, errors, abort) runs in the ordinary test suite on machines without a GPU.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "nccl.h"

namespace weft {

class DeviceApi {
 public:
  virtual ~DeviceApi() = default;
  // "cuda" or "cpu" (for logs and test names).
  virtual const char* name() const = 0;

  // True when only stream-ordered device operations may touch `pointer` (device or managed
  // memory); host memory, pinned or not, is false.
  virtual bool isDeviceMemory(const void* pointer) = 0;
  // Host memory that device operations can read and write (cudaHostAlloc, mapped), and that
  // a stream can wait on (waitValue); zero-filled.
  virtual ncclResult_t allocatePinned(size_t bytes, void** out) = 0;
  virtual void freePinned(void* pointer) = 0;
  // A synchronous copy out of device (or host) memory; not for the stream-ordered path, which
  // must never wait on the device from its progress thread.
  virtual ncclResult_t copyToHost(void* dst, const void* src, size_t bytes) = 0;

  // Stream operations: each returns at once and takes effect when the stream reaches it.
  virtual ncclResult_t copyAsync(void* dst, const void* src, size_t bytes, cudaStream_t stream) = 0;
  // `function` runs once everything queued before it on `stream` is done, and must not call
  // CUDA or block (CUDA runs host functions on one thread per process).
  virtual ncclResult_t launchHostFunction(cudaStream_t stream, void (*function)(void*), void* argument) = 0;
  // The stream waits until *flag has reached `value` (cyclically: (int32_t)(*flag - value) >= 0,
  // as CU_STREAM_WAIT_VALUE_GEQ). `flag` is in memory from allocatePinned; whoever stores to
  // it then calls flag->notify_all().
  virtual ncclResult_t waitValue(cudaStream_t stream, std::atomic<uint32_t>* flag, uint32_t value) = 0;
  // Whether `stream` is being captured into a CUDA graph.
  virtual ncclResult_t isCapturing(cudaStream_t stream, bool* capturing) = 0;
};

// The device API the runtime uses: the one installed for testing, else CUDA when weft was built
// with it and a device is present, else none (null: no pointer is device memory).
DeviceApi* deviceApi();
// Replaces the device API for this process (tests: the CPU implementation); null restores the
// default. Install before the first communicator is created and keep the object alive.
void installDeviceApi(DeviceApi* api);

// True when `pointer` is device memory of the current device API (false when there is none).
bool isDeviceMemory(const void* pointer);
// Copies `bytes` from host or device memory into host memory, synchronously.
ncclResult_t copyToHost(void* dst, const void* src, size_t bytes);

// Whether cyclic counter `value` has reached `target` (the comparison waitValue makes).
inline bool counterReached(uint32_t value, uint32_t target) { return static_cast<int32_t>(value - target) >= 0; }

}  // namespace weft
