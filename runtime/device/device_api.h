// The seam between the runtime and CUDA: every CUDA call the stream-ordered path makes goes
// through this small interface. The CUDA implementation (cuda_device.cc) is thin; the CPU
// implementation (cpu_device.h) emulates device memory with host memory and streams with
// ordered queues on threads, so that the whole stream-ordered path (queueing, progress,
// completion, errors, abort) runs in the ordinary test suite on machines without a GPU.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "common/reduce.h"
#include "nccl.h"
#include "transport/fd_broker.h"

namespace weft {

// Where a buffer lives, as far as stream order goes.
enum class MemoryKind {
  Host,        // pageable host memory: a call on it runs when it is made
  PinnedHost,  // page-locked (cudaHostAlloc, cudaHostRegister): the device reaches it, so a call
               // on it is stream-ordered, as in NCCL, and reads and writes it in place
  Device,      // device or managed memory: stream-ordered, staged through pinned host memory
};

// A device buffer as another process of this host can map it (CUDA IPC): the handle of the
// allocation it lies in (a file descriptor through the fd broker: cuMem's POSIX handle on CUDA,
// the memfd of the CPU device's memory), and where in it.
struct DeviceBufferExport {
  enum Kind : uint32_t { None = 0, FileDescriptor = 1 };
  uint32_t kind = None;
  uint64_t ownerProcess[2] = {};  // thisProcessToken() of the exporter
  FdTicket ticket;                // its secret names the allocation uniquely
  uint64_t ownerBase = 0;         // the allocation's address in its owner (the owner's own process uses it)
  uint64_t allocationBytes = 0;
  uint64_t offset = 0;  // of the buffer in the allocation
};

class DeviceApi {
 public:
  virtual ~DeviceApi() = default;
  // "cuda" or "cpu" (for logs and test names).
  virtual const char* name() const = 0;

  virtual MemoryKind memoryKind(const void* pointer) = 0;
  // Host memory that device operations can read and write (cudaHostAlloc, mapped), and that
  // a stream can wait on (waitValue); zero-filled.
  virtual ncclResult_t allocatePinned(size_t bytes, void** out) = 0;
  virtual void freePinned(void* pointer) = 0;
  // ncclMemAlloc's memory on the calling thread's current device, not zero-filled (as NCCL's).
  // CUDA: cuMem memory whose handle can be exported as a POSIX file descriptor (for peers on the
  // host, as NCCL's), or cudaMalloc's where the driver refuses that.
  virtual ncclResult_t allocateDevice(size_t bytes, void** out) = 0;
  // Frees what allocateDevice gave.
  virtual ncclResult_t freeDevice(void* pointer) = 0;
  // A synchronous copy out of device (or host) memory; not for the stream-ordered path, which
  // must never wait on the device from its progress thread.
  virtual ncclResult_t copyToHost(void* dst, const void* src, size_t bytes) = 0;

  // Stream operations: each returns at once and takes effect when the stream reaches it.
  virtual ncclResult_t copyAsync(void* dst, const void* src, size_t bytes, cudaStream_t stream) = 0;
  // `rows` rows of `width` bytes, dstPitch and srcPitch bytes apart (cudaMemcpy2DAsync): the
  // strided blocks of a staging slice (runtime/exec/staging_slices.h) in one operation.
  virtual ncclResult_t copy2DAsync(void* dst, size_t dstPitch, const void* src, size_t srcPitch, size_t width,
                                   size_t rows, cudaStream_t stream) = 0;
  // `function` runs once everything queued before it on `stream` is done, and must not call
  // CUDA or block (CUDA runs host functions on one thread per process).
  virtual ncclResult_t launchHostFunction(cudaStream_t stream, void (*function)(void*), void* argument) = 0;
  // The stream waits until *flag has reached `value` (cyclically: (int32_t)(*flag - value) >= 0,
  // as CU_STREAM_WAIT_VALUE_GEQ). `flag` is in memory from allocatePinned; whoever stores to
  // it then calls flag->notify_all().
  virtual ncclResult_t waitValue(cudaStream_t stream, std::atomic<uint32_t>* flag, uint32_t value) = 0;
  // Whether `stream` is being captured into a CUDA graph.
  virtual ncclResult_t isCapturing(cudaStream_t stream, bool* capturing) = 0;

  // The device data path between ranks of one host (the direct all-reduce on device buffers).
  // Whether peer processes can map [pointer, pointer + bytes) of device memory; fills `out`.
  // False where the memory cannot be shared (then the call is staged through host memory): on
  // CUDA, all but ncclMemAlloc's cuMem memory (cuda_device.cc says why).
  virtual bool exportDeviceBuffer(const void* pointer, size_t bytes, DeviceBufferExport* out) = 0;
  // The address in this process of a buffer a peer exported (its own address where the peer is
  // this process), its allocation mapped until releaseDeviceBuffer; a mapping holds the peer's
  // memory, so the peer may free it meanwhile. ncclRemoteError when the owner is gone within
  // `timeoutSeconds`; an error too where this thread's current device cannot reach the memory.
  virtual ncclResult_t importDeviceBuffer(const DeviceBufferExport& buffer, double timeoutSeconds, char** out) = 0;
  // Unmaps what importDeviceBuffer mapped; not while a stream waits on weft (it may synchronize).
  virtual void releaseDeviceBuffer(const DeviceBufferExport& buffer, char* address) = 0;
  // A stream of weft's own, which waits for no other (cudaStreamNonBlocking): the progress thread
  // queues its kernels and copies on it and waits for them there, never on a caller's stream.
  virtual ncclResult_t createWorkStream(cudaStream_t* out) = 0;
  virtual void destroyWorkStream(cudaStream_t stream) = 0;
  virtual ncclResult_t synchronizeStream(cudaStream_t stream) = 0;
  // Kernels on `stream` (common/cuda/reduce.h on CUDA): dst = a op b, and dst = src / divisor;
  // any pointer may be a peer's mapped buffer.
  virtual ncclResult_t reduceAsync(void* dst, const void* a, const void* b, size_t count, ncclDataType_t type,
                                   ReduceOp op, cudaStream_t stream) = 0;
  virtual ncclResult_t divideAsync(void* dst, const void* src, size_t count, ncclDataType_t type, uint64_t divisor,
                                   cudaStream_t stream) = 0;

  // The calling thread's current device (cudaGetDevice), making one current (cudaSetDevice),
  // and how many there are. A communicator records the device it was created on and makes it
  // current wherever it calls the device (the caller's thread, its progress thread), as NCCL
  // does: a CUDA call from a thread that never chose a device would create a context on
  // device 0, and stream 0 means the legacy stream of the current device.
  virtual ncclResult_t currentDevice(int* device) = 0;
  virtual ncclResult_t setCurrentDevice(int device) = 0;
  virtual int deviceCount() = 0;
};

// Where the progress thread's device work goes: kernels and copies on a stream of weft's own
// (DeviceApi::createWorkStream), e.g. the local steps of the direct all-reduce on device buffers.
struct DeviceWork {
  DeviceApi* api = nullptr;
  cudaStream_t stream = nullptr;
};

// The device API the runtime uses: the one installed for testing, else CUDA when weft was built
// with it and a device is present, else none (null: no pointer is device memory).
DeviceApi* deviceApi();
// Replaces the device API for this process (tests: the CPU implementation); null restores the
// default. Install before the first communicator is created and keep the object alive.
void installDeviceApi(DeviceApi* api);

// Where `pointer` lives for the current device API (host memory when there is none).
MemoryKind memoryKind(const void* pointer);
// True when only stream-ordered device operations may touch `pointer` (device or managed memory).
inline bool isDeviceMemory(const void* pointer) { return memoryKind(pointer) == MemoryKind::Device; }
// Copies `bytes` from host or device memory into host memory, synchronously.
ncclResult_t copyToHost(void* dst, const void* src, size_t bytes);

// This process's PID namespace and PID: tells a peer whether an exported buffer is its own
// process's, where a PID alone cannot (ranks in other PID namespaces, e.g. containers).
void thisProcessToken(uint64_t out[2]);

// The calling thread's current device, or -1 without a device API (or when CUDA cannot say).
int currentDeviceOrNone();

// Makes a communicator's device current on this thread for the scope's life, then the caller's
// again. Does nothing without a device API or for a device < 0 (none recorded).
class CurrentDeviceScope {
 public:
  explicit CurrentDeviceScope(int device);
  ~CurrentDeviceScope();
  CurrentDeviceScope(const CurrentDeviceScope&) = delete;
  CurrentDeviceScope& operator=(const CurrentDeviceScope&) = delete;
  // Whether the device could be made current (true when there was nothing to do).
  ncclResult_t result() const { return result_; }

 private:
  DeviceApi* api_;
  int previous_ = -1;
  ncclResult_t result_ = ncclSuccess;
};

// Whether cyclic counter `value` has reached `target` (the comparison waitValue makes).
inline bool counterReached(uint32_t value, uint32_t target) { return static_cast<int32_t>(value - target) >= 0; }

}  // namespace weft
