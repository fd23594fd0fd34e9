// What the CUDA tests (tests/gpu) share: whether there is a GPU to run on, and driver functions.
// Include only where WEFT_HAVE_CUDA.
#pragma once

#include <cuda_runtime.h>

#include <string>

namespace weft::testing {

// Empty when a CUDA device is usable, else why not (the tests skip with it).
inline std::string whyNoCudaGpu() {
  int devices = 0;
  const cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess) return std::string("no usable CUDA device: ") + cudaGetErrorString(err);
  if (devices == 0) return "no CUDA device present";
  return "";
}

// A driver function as CUDA 12's version of it (the tests link no libcuda), or null.
template <class Function>
Function driverFunction(const char* name) {
  void* function = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
  const cudaError_t looked = cudaGetDriverEntryPointByVersion(name, &function, 12000, cudaEnableDefault, &found);
#else
  const cudaError_t looked = cudaGetDriverEntryPoint(name, &function, cudaEnableDefault, &found);
#endif
  if (looked != cudaSuccess || found != cudaDriverEntryPointSuccess) return nullptr;
  return reinterpret_cast<Function>(function);
}

}  // namespace weft::testing
