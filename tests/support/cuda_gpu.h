// Whether the CUDA tests (tests/gpu) have a GPU to run on. Include only where WEFT_HAVE_CUDA.
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

}  // namespace weft::testing
