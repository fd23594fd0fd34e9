#include "runtime/device/cuda_device.h"

#ifdef WEFT_HAVE_CUDA

#include <cuda.h>
#include <cuda_runtime.h>

#include <atomic>
#include <mutex>
#include <type_traits>
#include <vector>

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

 private:
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
