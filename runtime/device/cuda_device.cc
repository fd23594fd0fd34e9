#include "runtime/device/cuda_device.h"

#ifdef WEFT_HAVE_CUDA

#include <cuda.h>
#include <cuda_runtime.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <type_traits>
#include <vector>

#include "common/cuda/reduce.h"
#include "common/log.h"
#include "common/status.h"

namespace weft {

namespace {

ncclResult_t cudaFailure(cudaError_t error, const char* what) {
  return fail(ncclUnhandledCudaError, "%s failed: %s", what, cudaGetErrorString(error));
}

#define WEFT_CUDA_CHECK(call)                                                         \
  do {                                                                                \
    cudaError_t weft_cuda_error_ = (call);                                            \
    if (weft_cuda_error_ != cudaSuccess) return cudaFailure(weft_cuda_error_, #call); \
  } while (0)

using StreamWaitValue32 = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

// A driver function by name, as CUDA 12's version of it, without linking libcuda; null when the
// driver has none.
void* driverFunction(const char* name) {
  void* function = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
  const cudaError_t looked = cudaGetDriverEntryPointByVersion(name, &function, 12000, cudaEnableDefault, &found);
#else  // the versioned lookup is CUDA 12.5's; before it, the default version is CUDA 12's here
  const cudaError_t looked = cudaGetDriverEntryPoint(name, &function, cudaEnableDefault, &found);
#endif
  if (looked == cudaSuccess && found == cudaDriverEntryPointSuccess) return function;
  cudaGetLastError();
  return nullptr;
}

// The driver's virtual memory management (cuMem), which ncclMemAlloc uses as NCCL does: physical
// memory with an exportable handle, mapped at a reserved address.
struct CuMem {
  decltype(&::cuDeviceGet) deviceGet = nullptr;
  decltype(&::cuMemGetAllocationGranularity) granularity = nullptr;
  decltype(&::cuMemCreate) create = nullptr;
  decltype(&::cuMemAddressReserve) reserve = nullptr;
  decltype(&::cuMemMap) map = nullptr;
  decltype(&::cuMemSetAccess) setAccess = nullptr;
  decltype(&::cuMemRetainAllocationHandle) retainHandle = nullptr;
  decltype(&::cuMemGetAddressRange) addressRange = nullptr;
  decltype(&::cuMemUnmap) unmap = nullptr;
  decltype(&::cuMemRelease) release = nullptr;
  decltype(&::cuMemAddressFree) addressFree = nullptr;

  bool load() {
    auto get = [](auto* slot, const char* name) {
      *slot = reinterpret_cast<std::remove_pointer_t<decltype(slot)>>(driverFunction(name));
      return *slot != nullptr;
    };
    return get(&deviceGet, "cuDeviceGet") && get(&granularity, "cuMemGetAllocationGranularity") &&
           get(&create, "cuMemCreate") && get(&reserve, "cuMemAddressReserve") && get(&map, "cuMemMap") &&
           get(&setAccess, "cuMemSetAccess") && get(&retainHandle, "cuMemRetainAllocationHandle") &&
           get(&addressRange, "cuMemGetAddressRange") && get(&unmap, "cuMemUnmap") && get(&release, "cuMemRelease") &&
           get(&addressFree, "cuMemAddressFree");
  }

  // `bytes` of device memory on `device`, its handle exportable as a POSIX file descriptor.
  // Undoes what it did on failure and returns the driver's code.
  CUresult allocate(int device, size_t bytes, void** out) const {
    CUdevice handleDevice = 0;
    CUresult r = deviceGet(&handleDevice, device);
    if (r != CUDA_SUCCESS) return r;
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = handleDevice;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    size_t unit = 0;
    if ((r = granularity(&unit, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)) != CUDA_SUCCESS) return r;
    const size_t size = (bytes + unit - 1) / unit * unit;
    CUmemGenericAllocationHandle handle = 0;
    if ((r = create(&handle, size, &prop, 0)) != CUDA_SUCCESS) return r;
    CUdeviceptr address = 0;
    if ((r = reserve(&address, size, unit, 0, 0)) != CUDA_SUCCESS) {
      release(handle);
      return r;
    }
    // Read-write for its device and every device that can reach it, as NCCL grants: peer access
    // (cudaDeviceEnablePeerAccess) does not extend to cuMem memory.
    std::vector<CUmemAccessDesc> access(1);
    access[0].location = prop.location;
    access[0].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess) devices = 0;
    for (int peer = 0; peer < devices; ++peer) {
      int reaches = 0;
      if (peer == device || cudaDeviceCanAccessPeer(&reaches, peer, device) != cudaSuccess || !reaches) continue;
      access.push_back(access[0]);
      access.back().location.id = peer;
    }
    cudaGetLastError();  // a refused peer query is not the caller's error
    if ((r = map(address, size, 0, handle, 0)) != CUDA_SUCCESS ||
        (r = setAccess(address, size, access.data(), access.size())) != CUDA_SUCCESS) {
      unmap(address, size);  // harmless when the map failed
      addressFree(address, size);
      release(handle);
      return r;
    }
    *out = reinterpret_cast<void*>(address);
    return CUDA_SUCCESS;
  }

  // Frees what allocate() gave. *isCuMem false: `pointer` is not cuMem memory, nothing happened.
  CUresult free(void* pointer, bool* isCuMem) const {
    CUmemGenericAllocationHandle handle = 0;
    *isCuMem = retainHandle(&handle, pointer) == CUDA_SUCCESS;
    if (!*isCuMem) return CUDA_SUCCESS;
    CUdeviceptr base = 0;
    size_t size = 0;
    CUresult r = addressRange(&base, &size, reinterpret_cast<CUdeviceptr>(pointer));
    release(handle);  // the reference the retain took
    if (r != CUDA_SUCCESS) return r;
    if ((r = unmap(base, size)) != CUDA_SUCCESS) return r;
    if ((r = release(handle)) != CUDA_SUCCESS) return r;  // the allocation's own: freed, being unmapped
    return addressFree(base, size);
  }
};

// Where a pointer lives, asked of the driver: cuPointerGetAttributes never creates a context,
// where cudaPointerGetAttributes may create the calling thread's current device's primary
// context (hundreds of MiB of GPU memory in every process of a CPU-only job, or a context on
// GPU 0 for a thread that never chose a device). The attributes asked need no current context.
class PointerQuery {
 public:
  // False when the driver lacks the function (then the runtime is asked instead).
  bool available() {
    std::call_once(loaded_, [&] {
      getAttributes_ = reinterpret_cast<decltype(getAttributes_)>(driverFunction("cuPointerGetAttributes"));
    });
    return getAttributes_ != nullptr;
  }

  MemoryKind kindOf(const void* pointer) const {
    const CUdeviceptr address = reinterpret_cast<CUdeviceptr>(pointer);
    CUpointer_attribute kind[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED};
    unsigned int memoryType = 0;
    unsigned long long managed = 0;  // "a boolean": wide and zeroed, whatever width the driver writes
    void* kindData[] = {&memoryType, &managed};
    // Memory CUDA does not know gives success with null values, or CUDA_ERROR_INVALID_CONTEXT.
    if (getAttributes_(2, kind, kindData, address) != CUDA_SUCCESS) return MemoryKind::Host;
    if (managed || memoryType == CU_MEMORYTYPE_DEVICE) return MemoryKind::Device;
    if (memoryType != CU_MEMORYTYPE_HOST) return MemoryKind::Host;  // unknown to CUDA
    // Registered memory's device address may differ from its host one (where the device cannot
    // use host pointers): given that address, the host must not read it; stage it like device
    // memory. Asked apart: the host address applies to host memory only.
    CUpointer_attribute host[] = {CU_POINTER_ATTRIBUTE_HOST_POINTER};
    void* hostPointer = nullptr;
    void* hostData[] = {&hostPointer};
    if (getAttributes_(1, host, hostData, address) != CUDA_SUCCESS) return MemoryKind::Device;
    return hostPointer == pointer ? MemoryKind::PinnedHost : MemoryKind::Device;
  }

 private:
  std::once_flag loaded_;
  decltype(&::cuPointerGetAttributes) getAttributes_ = nullptr;
};

// cuMem's handle export and import (ncclMemAlloc's memory between processes), looked up apart
// from CuMem so that allocation works with a driver that lacks them.
struct CuMemSharing {
  decltype(&::cuMemExportToShareableHandle) exportHandle = nullptr;
  decltype(&::cuMemImportFromShareableHandle) importHandle = nullptr;

  bool load() {
    exportHandle = reinterpret_cast<decltype(exportHandle)>(driverFunction("cuMemExportToShareableHandle"));
    importHandle = reinterpret_cast<decltype(importHandle)>(driverFunction("cuMemImportFromShareableHandle"));
    return exportHandle && importHandle;
  }
};

class CudaDevice : public DeviceApi {
 public:
  const char* name() const override { return "cuda"; }

  MemoryKind memoryKind(const void* pointer) override {
    if (pointers_.available()) return pointers_.kindOf(pointer);
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
      cudaGetLastError();  // an unregistered host pointer is not an error here
      return MemoryKind::Host;
    }
    switch (attributes.type) {
      case cudaMemoryTypeDevice:
      case cudaMemoryTypeManaged: return MemoryKind::Device;
      case cudaMemoryTypeHost: return attributes.hostPointer == pointer ? MemoryKind::PinnedHost : MemoryKind::Device;
      default: return MemoryKind::Host;  // cudaMemoryTypeUnregistered
    }
  }

  ncclResult_t allocatePinned(size_t bytes, void** out) override {
    WEFT_CUDA_CHECK(cudaHostAlloc(out, bytes, cudaHostAllocMapped | cudaHostAllocPortable));
    memset(*out, 0, bytes);
    return ncclSuccess;
  }

  void freePinned(void* pointer) override { cudaFreeHost(pointer); }

  ncclResult_t allocateDevice(size_t bytes, void** out) override {
    int device = 0;
    WEFT_CUDA_CHECK(cudaGetDevice(&device));
    WEFT_CUDA_CHECK(cudaFree(nullptr));  // the device's primary context, which the memory will live in
    if (const CuMem* cuMem = loadCuMem()) {
      const CUresult r = cuMem->allocate(device, bytes, out);
      if (r == CUDA_SUCCESS) {
        {
          std::lock_guard<std::mutex> lock(exportMutex_);
          ownCuMem_.emplace(reinterpret_cast<CUdeviceptr>(*out), OfferedAllocation{});
        }
        WEFT_INFO(kLogAlloc, "ncclMemAlloc: %zu bytes at %p on device %d (cuMem, POSIX fd handle)", bytes, *out,
                  device);
        return ncclSuccess;
      }
      WEFT_INFO(kLogAlloc, "ncclMemAlloc: cuMem refused %zu bytes on device %d (CUresult %d); using cudaMalloc", bytes,
                device, static_cast<int>(r));
    }
    WEFT_CUDA_CHECK(cudaMalloc(out, bytes));
    WEFT_INFO(kLogAlloc, "ncclMemAlloc: %zu bytes at %p on device %d (cudaMalloc)", bytes, *out, device);
    return ncclSuccess;
  }

  ncclResult_t freeDevice(void* pointer) override {
    withdrawExport(pointer);
    // With the buffer's device current, as NCCL frees it (cudaFree needs its context).
    cudaPointerAttributes attributes{};
    WEFT_CUDA_CHECK(cudaPointerGetAttributes(&attributes, pointer));
    CurrentDeviceScope onDevice(attributes.device);
    WEFT_CHECK(onDevice.result());
    bool isCuMem = false;
    const CuMem* cuMem = loadCuMem();
    const CUresult freed = cuMem ? cuMem->free(pointer, &isCuMem) : CUDA_SUCCESS;
    if (isCuMem && freed != CUDA_SUCCESS)
      return fail(ncclUnhandledCudaError, "ncclMemFree(%p): freeing cuMem memory failed (CUresult %d)", pointer,
                  static_cast<int>(freed));
    if (!isCuMem) WEFT_CUDA_CHECK(cudaFree(pointer));
    return ncclSuccess;
  }

  ncclResult_t copyToHost(void* dst, const void* src, size_t bytes) override {
    WEFT_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
    return ncclSuccess;
  }

  ncclResult_t copyAsync(void* dst, const void* src, size_t bytes, cudaStream_t stream) override {
    WEFT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream));
    return ncclSuccess;
  }

  ncclResult_t copy2DAsync(void* dst, size_t dstPitch, const void* src, size_t srcPitch, size_t width, size_t rows,
                           cudaStream_t stream) override {
    // A pitch beyond the device's limit (cudaDevAttrMaxPitch, 2^31 - 1 bytes: a block of a call
    // that large) is refused: then one copy a row.
    int device = 0, maxPitch = 0;
    WEFT_CUDA_CHECK(cudaGetDevice(&device));
    WEFT_CUDA_CHECK(cudaDeviceGetAttribute(&maxPitch, cudaDevAttrMaxPitch, device));
    if (std::max(dstPitch, srcPitch) <= static_cast<size_t>(maxPitch)) {
      WEFT_CUDA_CHECK(cudaMemcpy2DAsync(dst, dstPitch, src, srcPitch, width, rows, cudaMemcpyDefault, stream));
      return ncclSuccess;
    }
    for (size_t row = 0; row < rows; ++row)
      WEFT_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(dst) + row * dstPitch,
                                      static_cast<const char*>(src) + row * srcPitch, width, cudaMemcpyDefault,
                                      stream));
    return ncclSuccess;
  }

  ncclResult_t launchHostFunction(cudaStream_t stream, void (*function)(void*), void* argument) override {
    WEFT_CUDA_CHECK(cudaLaunchHostFunc(stream, function, argument));
    return ncclSuccess;
  }

  ncclResult_t waitValue(cudaStream_t stream, std::atomic<uint32_t>* flag, uint32_t value) override {
    WEFT_CHECK(loadStreamWait());
    void* devicePointer = nullptr;
    WEFT_CUDA_CHECK(cudaHostGetDevicePointer(&devicePointer, flag, 0));
    CUresult result = streamWaitValue32_(reinterpret_cast<CUstream>(stream),
                                         reinterpret_cast<CUdeviceptr>(devicePointer), value, CU_STREAM_WAIT_VALUE_GEQ);
    if (result != CUDA_SUCCESS)
      return fail(ncclUnhandledCudaError, "cuStreamWaitValue32 failed (CUresult %d)", static_cast<int>(result));
    return ncclSuccess;
  }

  ncclResult_t currentDevice(int* device) override {
    WEFT_CUDA_CHECK(cudaGetDevice(device));
    return ncclSuccess;
  }

  ncclResult_t setCurrentDevice(int device) override {
    WEFT_CUDA_CHECK(cudaSetDevice(device));
    return ncclSuccess;
  }

  int deviceCount() override {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return devices;
  }

  ncclResult_t isCapturing(cudaStream_t stream, bool* capturing) override {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    WEFT_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
    *capturing = status != cudaStreamCaptureStatusNone;
    return ncclSuccess;
  }

  // ncclMemAlloc's cuMem memory: its POSIX file descriptor, offered through the fd broker once
  // per allocation. Not cudaMalloc memory (a cudaIpcMemHandle_t): an importer would have to
  // close its mapping before the owner frees, and CUDA does not tell it when (closing per call
  // may synchronize the device, under streams waiting on weft), while a cuMem mapping holds the
  // memory; nor managed memory, or another allocator's cuMem memory (its handle is not ours to
  // keep open). Those calls are staged.
  bool exportDeviceBuffer(const void* pointer, size_t bytes, DeviceBufferExport* out) override {
    const CuMem* cuMem = loadCuMem();
    if (!cuMem || memoryKind(pointer) != MemoryKind::Device) return false;
    CUdeviceptr base = 0;
    size_t size = 0;
    const CUdeviceptr address = reinterpret_cast<CUdeviceptr>(pointer);
    if (cuMem->addressRange(&base, &size, address) != CUDA_SUCCESS || address + bytes > base + size) {
      cudaGetLastError();
      return false;
    }
    CUmemGenericAllocationHandle handle = 0;
    if (cuMem->retainHandle(&handle, const_cast<void*>(pointer)) != CUDA_SUCCESS) return false;  // not cuMem
    DeviceBufferExport buffer;
    const bool offered = offerCuMem(base, handle, &buffer.ticket);
    cuMem->release(handle);  // the reference the retain took
    if (!offered) return false;
    buffer.kind = DeviceBufferExport::FileDescriptor;
    thisProcessToken(buffer.ownerProcess);
    buffer.ownerBase = base;
    buffer.allocationBytes = size;
    buffer.offset = address - base;
    *out = buffer;
    return true;
  }

  ncclResult_t importDeviceBuffer(const DeviceBufferExport& buffer, double timeoutSeconds, char** out) override {
    if (ownedByThisProcess(buffer)) {
      // CUDA refuses a process its own handles; the owner's address is valid here, if this
      // thread's device can reach it.
      char* address = reinterpret_cast<char*>(buffer.ownerBase + buffer.offset);
      WEFT_CHECK(reachFromCurrentDevice(address));
      *out = address;
      return ncclSuccess;
    }
    char* base = nullptr;
    WEFT_CHECK(mapPeerAllocation(buffer, timeoutSeconds, &base));
    *out = base + buffer.offset;
    return ncclSuccess;
  }

  void releaseDeviceBuffer(const DeviceBufferExport& buffer, char* address) override {
    if (!address || ownedByThisProcess(buffer)) return;
    const CUdeviceptr base = reinterpret_cast<CUdeviceptr>(address - buffer.offset);
    if (const CuMem* cuMem = loadCuMem()) {
      cuMem->unmap(base, buffer.allocationBytes);
      cuMem->addressFree(base, buffer.allocationBytes);
    }
  }

  ncclResult_t createWorkStream(cudaStream_t* out) override {
    WEFT_CUDA_CHECK(cudaStreamCreateWithFlags(out, cudaStreamNonBlocking));
    return ncclSuccess;
  }

  void destroyWorkStream(cudaStream_t stream) override { cudaStreamDestroy(stream); }

  ncclResult_t synchronizeStream(cudaStream_t stream) override {
    WEFT_CUDA_CHECK(cudaStreamSynchronize(stream));
    return ncclSuccess;
  }

  ncclResult_t reduceAsync(void* dst, const void* a, const void* b, size_t count, ncclDataType_t type, ReduceOp op,
                           cudaStream_t stream) override {
    return cuda::reduceBuffers(dst, a, b, count, type, op, stream);
  }

  ncclResult_t divideAsync(void* dst, const void* src, size_t count, ncclDataType_t type, uint64_t divisor,
                           cudaStream_t stream) override {
    return cuda::divideBuffer(dst, src, count, type, divisor, stream);
  }

 private:
  // An ncclMemAlloc cuMem allocation's descriptor, once exported: kept open (and offered) until
  // ncclMemFree.
  struct OfferedAllocation {
    int fd = -1;  // not exported yet
    FdTicket ticket;
  };

  // Only ncclMemAlloc's own allocations: an open descriptor holds the memory, and weft learns
  // when to close it only from ncclMemFree (another allocator's cuMem memory is staged).
  bool offerCuMem(CUdeviceptr base, CUmemGenericAllocationHandle handle, FdTicket* ticket) {
    const CuMemSharing* sharing = loadCuMemSharing();
    if (!sharing) return false;
    std::lock_guard<std::mutex> lock(exportMutex_);
    auto it = ownCuMem_.find(base);
    if (it == ownCuMem_.end()) return false;
    OfferedAllocation& offer = it->second;
    if (offer.fd < 0) {
      int fd = -1;
      if (sharing->exportHandle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) != CUDA_SUCCESS) return false;
      if (offerFileDescriptor(fd, &offer.ticket) != ncclSuccess) {
        close(fd);
        return false;
      }
      offer.fd = fd;
    }
    *ticket = offer.ticket;
    return true;
  }

  void withdrawExport(void* pointer) {
    std::lock_guard<std::mutex> lock(exportMutex_);
    auto it = ownCuMem_.find(reinterpret_cast<CUdeviceptr>(pointer));
    if (it == ownCuMem_.end()) return;
    if (it->second.fd >= 0) {
      withdrawFileDescriptor(it->second.ticket);
      close(it->second.fd);
    }
    ownCuMem_.erase(it);
  }

  static bool ownedByThisProcess(const DeviceBufferExport& buffer) {
    uint64_t me[2];
    thisProcessToken(me);
    return buffer.ownerProcess[0] == me[0] && buffer.ownerProcess[1] == me[1];
  }

  // Whether a kernel on this thread's device may touch `address`, memory of this process maybe
  // on another device: ncclMemAlloc's cuMem memory is mapped at allocation for every device that
  // can reach its own (peer access does not extend to cuMem memory).
  ncclResult_t reachFromCurrentDevice(const void* address) {
    cudaPointerAttributes attributes{};
    WEFT_CUDA_CHECK(cudaPointerGetAttributes(&attributes, address));
    int device = 0;
    WEFT_CUDA_CHECK(cudaGetDevice(&device));
    if (attributes.device == device) return ncclSuccess;
    int reaches = 0;
    WEFT_CUDA_CHECK(cudaDeviceCanAccessPeer(&reaches, device, attributes.device));
    if (!reaches)
      return fail(ncclInvalidUsage, "device %d cannot reach memory of device %d (no peer access)", device,
                  attributes.device);
    return ncclSuccess;
  }

  // Maps a peer's whole cuMem allocation through its descriptor, read-write for the current
  // device; the mapping holds the memory until it is released.
  ncclResult_t mapPeerAllocation(const DeviceBufferExport& buffer, double timeoutSeconds, char** base) {
    const CuMem* cuMem = loadCuMem();
    const CuMemSharing* sharing = loadCuMemSharing();
    if (buffer.kind != DeviceBufferExport::FileDescriptor || !cuMem || !sharing)
      return fail(ncclInvalidUsage, "a peer's device buffer (handle kind %u) cannot be imported by this driver",
                  buffer.kind);
    int fd = -1;
    WEFT_CHECK(fetchFileDescriptor(buffer.ticket, timeoutSeconds, &fd));
    CUmemGenericAllocationHandle handle = 0;
    CUresult r = sharing->importHandle(&handle, reinterpret_cast<void*>(static_cast<uintptr_t>(fd)),
                                       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    close(fd);
    if (r != CUDA_SUCCESS)
      return fail(ncclUnhandledCudaError, "cuMemImportFromShareableHandle failed (CUresult %d)", static_cast<int>(r));
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess) {
      cuMem->release(handle);
      return fail(ncclUnhandledCudaError, "cudaGetDevice failed while mapping a peer's buffer");
    }
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = device;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CUdeviceptr address = 0;
    const size_t size = buffer.allocationBytes;
    if ((r = cuMem->reserve(&address, size, 0, 0, 0)) == CUDA_SUCCESS) {
      if ((r = cuMem->map(address, size, 0, handle, 0)) == CUDA_SUCCESS &&
          (r = cuMem->setAccess(address, size, &access, 1)) != CUDA_SUCCESS)
        cuMem->unmap(address, size);
      if (r != CUDA_SUCCESS) cuMem->addressFree(address, size);
    }
    cuMem->release(handle);  // the mapping holds the memory now
    if (r != CUDA_SUCCESS)
      return fail(ncclUnhandledCudaError, "mapping a peer's cuMem allocation of %zu bytes failed (CUresult %d)", size,
                  static_cast<int>(r));
    *base = reinterpret_cast<char*>(address);
    return ncclSuccess;
  }

  const CuMemSharing* loadCuMemSharing() {
    std::call_once(sharingLoaded_, [&] { sharingUsable_ = sharing_.load(); });
    return sharingUsable_ ? &sharing_ : nullptr;
  }

  ncclResult_t loadStreamWait() {
    std::call_once(loaded_, [&] {
      streamWaitValue32_ = reinterpret_cast<StreamWaitValue32>(driverFunction("cuStreamWaitValue32"));
    });
    if (!streamWaitValue32_)
      return fail(ncclUnhandledCudaError,
                  "the CUDA driver has no cuStreamWaitValue32: device-memory collectives need stream memory "
                  "operations (CUDA 12 or later)");
    return ncclSuccess;
  }

  // Null when the driver lacks any of cuMem's functions.
  const CuMem* loadCuMem() {
    std::call_once(cuMemLoaded_, [&] { cuMemUsable_ = cuMem_.load(); });
    return cuMemUsable_ ? &cuMem_ : nullptr;
  }

  std::once_flag loaded_;
  StreamWaitValue32 streamWaitValue32_ = nullptr;
  std::once_flag cuMemLoaded_;
  CuMem cuMem_;
  bool cuMemUsable_ = false;
  PointerQuery pointers_;
  std::once_flag sharingLoaded_;
  CuMemSharing sharing_;
  bool sharingUsable_ = false;
  std::mutex exportMutex_;
  std::map<CUdeviceptr, OfferedAllocation> ownCuMem_;  // ncclMemAlloc's cuMem allocations, by base
};

}  // namespace

DeviceApi* cudaDeviceApi() {
  static DeviceApi* api = []() -> DeviceApi* {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
      cudaGetLastError();
      return nullptr;
    }
    return new CudaDevice;  // process lifetime: host functions may still reference it at exit
  }();
  return api;
}

}  // namespace weft

#else

namespace weft {
DeviceApi* cudaDeviceApi() { return nullptr; }
}  // namespace weft

#endif
