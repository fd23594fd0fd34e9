#include "runtime/device/cpu_device.h"

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <cstring>

#include <sys/resource.h>

#include "common/status.h"

namespace weft {

namespace {
thread_local int currentCpuDevice = 0;  // per thread, as CUDA's current device
}  // namespace

// One stream: operations run in order on the stream's own thread.
class CpuDevice::Stream {
 public:
  Stream() : thread_([this] { run(); }) {}
  ~Stream() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }

  void enqueue(std::function<void()> operation) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      operations_.push_back(std::move(operation));
      ++queued_;
    }
    changed_.notify_all();
  }

  void synchronize() {
    std::unique_lock<std::mutex> lock(mutex_);
    const uint64_t target = queued_;
    changed_.wait(lock, [&] { return completed_ >= target; });
  }

  std::atomic<bool> capturing{false};

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      changed_.wait(lock, [&] { return stopping_ || !operations_.empty(); });
      if (operations_.empty()) return;  // stopping, and everything queued has run
      std::function<void()> operation = std::move(operations_.front());
      operations_.pop_front();
      lock.unlock();
      operation();
      lock.lock();
      ++completed_;
      changed_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> operations_;
  uint64_t queued_ = 0;
  uint64_t completed_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

CpuDevice::CpuDevice() {
  // Each allocation is a memfd (exportable, as cuMem memory is), open until freed: a test grid
  // keeps more than 1024 alive, the soft limit many systems start a process with.
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
  streams_.push_back(std::make_unique<Stream>());
  nullStream_ = streams_.back().get();
}

CpuDevice::~CpuDevice() {
  std::lock_guard<std::mutex> lock(mutex_);
  streams_.clear();  // each stream finishes what it was given
  for (auto& [start, bytes] : deviceAllocations_) releaseDeviceMemory(const_cast<char*>(start));
}

CpuDevice::Stream* CpuDevice::streamOf(cudaStream_t stream) {
  return stream ? reinterpret_cast<Stream*>(stream) : nullStream_;
}

namespace {
bool inside(const std::map<const char*, size_t>& allocations, const char* p) {
  auto it = allocations.upper_bound(p);
  if (it == allocations.begin()) return false;
  --it;
  return p < it->first + it->second;
}
}  // namespace

MemoryKind CpuDevice::memoryKind(const void* pointer) {
  const char* p = static_cast<const char*>(pointer);
  std::lock_guard<std::mutex> lock(mutex_);
  if (inside(deviceAllocations_, p)) return MemoryKind::Device;
  if (inside(pinnedAllocations_, p)) return MemoryKind::PinnedHost;
  return MemoryKind::Host;
}

ncclResult_t CpuDevice::allocatePinned(size_t bytes, void** out) {
  const size_t size = std::max<size_t>(bytes, 1);
  *out = std::calloc(1, size);
  if (!*out) return fail(ncclSystemError, "could not allocate %zu bytes of (emulated) pinned memory", bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  pinnedAllocations_[static_cast<const char*>(*out)] = size;
  return ncclSuccess;
}

void CpuDevice::freePinned(void* pointer) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pinnedAllocations_.erase(static_cast<const char*>(pointer));
  }
  std::free(pointer);
}

ncclResult_t CpuDevice::copyToHost(void* dst, const void* src, size_t bytes) {
  memcpy(dst, src, bytes);
  return ncclSuccess;
}

ncclResult_t CpuDevice::copyAsync(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  streamCopies_.fetch_add(1);
  streamOf(stream)->enqueue([=] { memcpy(dst, src, bytes); });
  return ncclSuccess;
}

ncclResult_t CpuDevice::copy2DAsync(void* dst, size_t dstPitch, const void* src, size_t srcPitch, size_t width,
                                    size_t rows, cudaStream_t stream) {
  assert(width <= dstPitch && width <= srcPitch);  // as CUDA requires (cudaErrorInvalidPitchValue)
  streamCopies_.fetch_add(1);
  streamCopies2D_.fetch_add(1);
  streamOf(stream)->enqueue([=] {
    for (size_t row = 0; row < rows; ++row)
      memcpy(static_cast<char*>(dst) + row * dstPitch, static_cast<const char*>(src) + row * srcPitch, width);
  });
  return ncclSuccess;
}

ncclResult_t CpuDevice::launchHostFunction(cudaStream_t stream, void (*function)(void*), void* argument) {
  hostFunctionDevice_.store(currentCpuDevice);
  streamOf(stream)->enqueue([=] { function(argument); });
  return ncclSuccess;
}

ncclResult_t CpuDevice::waitValue(cudaStream_t stream, std::atomic<uint32_t>* flag, uint32_t value) {
  flagWaits_.fetch_add(1);
  streamOf(stream)->enqueue([=] {
    for (uint32_t seen = flag->load(std::memory_order_acquire); !counterReached(seen, value);
         seen = flag->load(std::memory_order_acquire))
      flag->wait(seen, std::memory_order_acquire);
  });
  return ncclSuccess;
}

ncclResult_t CpuDevice::isCapturing(cudaStream_t stream, bool* capturing) {
  *capturing = streamOf(stream)->capturing;
  return ncclSuccess;
}

ncclResult_t CpuDevice::currentDevice(int* device) {
  *device = currentCpuDevice;
  return ncclSuccess;
}

ncclResult_t CpuDevice::setCurrentDevice(int device) {
  if (device < 0 || device >= devices_.load())
    return fail(ncclUnhandledCudaError, "cudaSetDevice(%d): invalid device ordinal (the CPU device has %d)", device,
                devices_.load());
  currentCpuDevice = device;
  return ncclSuccess;
}

ncclResult_t CpuDevice::allocateDevice(size_t bytes, void** out) {
  void* p = nullptr;
  if (sharedAlloc(&p, std::max<size_t>(bytes, 1)) != ncclSuccess)
    return fail(ncclSystemError, "cudaMalloc(%zu) on the CPU device: %s", bytes, lastErrorMessage().c_str());
  std::lock_guard<std::mutex> lock(mutex_);
  deviceAllocations_[static_cast<const char*>(p)] = bytes;
  *out = p;
  return ncclSuccess;
}

ncclResult_t CpuDevice::allocatePlainDevice(size_t bytes, void** out) {
  char* p = static_cast<char*>(std::calloc(1, std::max<size_t>(bytes, 1)));
  if (!p) return fail(ncclSystemError, "cudaMalloc(%zu) on the CPU device: out of memory", bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  deviceAllocations_[p] = bytes;
  *out = p;
  return ncclSuccess;
}

ncclResult_t CpuDevice::freeDevice(void* pointer) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = deviceAllocations_.find(static_cast<const char*>(pointer));
    if (it == deviceAllocations_.end())
      return fail(ncclInvalidArgument, "cudaFree(%p) on the CPU device: not an allocation of it", pointer);
    deviceAllocations_.erase(it);
  }
  return releaseDeviceMemory(pointer);
}

ncclResult_t CpuDevice::releaseDeviceMemory(void* pointer) {
  SharedBufferLocation location;
  if (findSharedBuffer(pointer, 1, &location)) return sharedFree(pointer);  // allocateDevice's
  std::free(pointer);                                                       // allocatePlainDevice's
  return ncclSuccess;
}

bool CpuDevice::exportDeviceBuffer(const void* pointer, size_t bytes, DeviceBufferExport* out) {
  SharedBufferLocation location;
  if (!exportable_.load() || memoryKind(pointer) != MemoryKind::Device || !findSharedBuffer(pointer, bytes, &location))
    return false;
  *out = DeviceBufferExport{};
  out->kind = DeviceBufferExport::FileDescriptor;
  thisProcessToken(out->ownerProcess);
  out->ticket = location.ticket;
  out->ownerBase = reinterpret_cast<uintptr_t>(pointer) - location.offset;
  out->allocationBytes = location.bytes;
  out->offset = location.offset;
  return true;
}

ncclResult_t CpuDevice::importDeviceBuffer(const DeviceBufferExport& buffer, double /*timeoutSeconds*/, char** out) {
  if (buffer.kind != DeviceBufferExport::FileDescriptor)
    return fail(ncclInvalidUsage, "the CPU device cannot import a handle of kind %u", buffer.kind);
  if (!importable_.load())
    return fail(ncclUnhandledCudaError, "importing a peer's buffer on the CPU device: refused (as the test asked)");
  SharedBufferLocation location;
  location.ticket = buffer.ticket;
  location.bytes = buffer.allocationBytes;
  location.offset = buffer.offset;
  WEFT_CHECK(peerBuffers_.map(location, out));
  imports_.fetch_add(1);
  return ncclSuccess;
}

ncclResult_t CpuDevice::createWorkStream(cudaStream_t* out) {
  *out = createStream();
  return ncclSuccess;
}

ncclResult_t CpuDevice::synchronizeStream(cudaStream_t stream) {
  synchronize(stream);
  return ncclSuccess;
}

ncclResult_t CpuDevice::reduceAsync(void* dst, const void* a, const void* b, size_t count, ncclDataType_t type,
                                    ReduceOp op, cudaStream_t stream) {
  kernelLaunches_.fetch_add(1);
  streamOf(stream)->enqueue([=] { reduceBuffers(dst, a, b, count, type, op); });
  return ncclSuccess;
}

ncclResult_t CpuDevice::divideAsync(void* dst, const void* src, size_t count, ncclDataType_t type, uint64_t divisor,
                                    cudaStream_t stream) {
  kernelLaunches_.fetch_add(1);
  streamOf(stream)->enqueue([=] { divideBuffer(dst, src, count, type, divisor); });
  return ncclSuccess;
}

size_t CpuDevice::deviceAllocationCount() {
  std::lock_guard<std::mutex> lock(mutex_);
  return deviceAllocations_.size();
}

cudaStream_t CpuDevice::createStream() {
  std::lock_guard<std::mutex> lock(mutex_);
  streams_.push_back(std::make_unique<Stream>());
  return reinterpret_cast<cudaStream_t>(streams_.back().get());
}

void CpuDevice::destroyStream(cudaStream_t stream) {
  if (!stream) return;
  synchronize(stream);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = std::find_if(streams_.begin(), streams_.end(),
                         [&](const std::unique_ptr<Stream>& s) { return s.get() == streamOf(stream); });
  if (it != streams_.end()) streams_.erase(it);
}

void CpuDevice::synchronize(cudaStream_t stream) { streamOf(stream)->synchronize(); }

void CpuDevice::enqueue(cudaStream_t stream, std::function<void()> work) { streamOf(stream)->enqueue(std::move(work)); }

void CpuDevice::setCapturing(cudaStream_t stream, bool capturing) { streamOf(stream)->capturing = capturing; }

}  // namespace weft
