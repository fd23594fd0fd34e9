#include "runtime/device/cuda_device.h"

#ifdef WEFT_HAVE_CUDA

#include <cuda.h>
#include <cuda_runtime.h>

#include <mutex>

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

class CudaDevice : public DeviceApi {
 public:
  const char* name() const override { return "cuda"; }

  MemoryKind memoryKind(const void* pointer) override {
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
      cudaGetLastError();  // an unregistered host pointer is not an error here
      return MemoryKind::Host;
    }
    switch (attributes.type) {
      case cudaMemoryTypeDevice:
      case cudaMemoryTypeManaged: return MemoryKind::Device;
      // Registered memory's device address may differ from its host one (where the device cannot
      // use host pointers): given that address, the host must not read it; stage it like device memory.
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
      void* function = nullptr;
      cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
      const cudaError_t looked =
          cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", &function, 12000, cudaEnableDefault, &found);
#else  // the versioned lookup is CUDA 12.5's; before it, the default version is CUDA 12's here
      const cudaError_t looked = cudaGetDriverEntryPoint("cuStreamWaitValue32", &function, cudaEnableDefault, &found);
#endif
      if (looked == cudaSuccess && found == cudaDriverEntryPointSuccess)
        streamWaitValue32_ = reinterpret_cast<StreamWaitValue32>(function);
      else
        cudaGetLastError();
    });
    if (!streamWaitValue32_)
      return fail(ncclUnhandledCudaError,
                  "the CUDA driver has no cuStreamWaitValue32: device-memory collectives need stream memory "
                  "operations (CUDA 12 or later)");
    return ncclSuccess;
  }

  std::once_flag loaded_;
  StreamWaitValue32 streamWaitValue32_ = nullptr;
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
