// The per-(device, stream) scratch cache; see workspace.h.
#include "compression/cuda/workspace.h"

#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <utility>

namespace weft::compression::cuda {
namespace {

struct Buffer {
  void* ptr = nullptr;
  size_t bytes = 0;
};

std::mutex mutex;
// Keyed by stream id (cudaStreamGetId), not handle: a destroyed stream's handle can come back
// for a new stream while the old one's work is still running.
std::map<std::pair<int, unsigned long long>, Buffer> buffers;

}  // namespace

ncclResult_t streamWorkspace(void* stream, size_t bytes, void** out) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  int device = 0;
  unsigned long long id = 0;
  if (cudaGetDevice(&device) != cudaSuccess || cudaStreamGetId(s, &id) != cudaSuccess) return ncclUnhandledCudaError;
  std::lock_guard<std::mutex> lock(mutex);
  Buffer& b = buffers[{device, id}];
  if (b.bytes < bytes) {
    if (b.ptr != nullptr) {
      if (cudaStreamSynchronize(s) != cudaSuccess || cudaFree(b.ptr) != cudaSuccess) return ncclUnhandledCudaError;
      b = Buffer{};
    }
    if (cudaMalloc(&b.ptr, bytes) != cudaSuccess) return ncclUnhandledCudaError;
    b.bytes = bytes;
  }
  *out = b.ptr;
  return ncclSuccess;
}

}  // namespace weft::compression::cuda
