#include "runtime/comm/pointer_memory.h"

#include <cstring>

#include "common/status.h"

#ifdef WEFT_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace weft {

bool isDevicePointer(const void* pointer) {
#ifdef WEFT_HAVE_CUDA
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
    cudaGetLastError();  // an unregistered host pointer (or no driver) is not an error here
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice;
#else
  (void)pointer;
  return false;
#endif
}

ncclResult_t copyToHost(void* dst, const void* src, size_t bytes) {
#ifdef WEFT_HAVE_CUDA
  if (isDevicePointer(src)) {
    cudaError_t error = cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
    if (error != cudaSuccess)
      return fail(ncclUnhandledCudaError, "cudaMemcpy of %zu bytes from device memory failed: %s", bytes,
                  cudaGetErrorString(error));
    return ncclSuccess;
  }
#endif
  memcpy(dst, src, bytes);
  return ncclSuccess;
}

}  // namespace weft
