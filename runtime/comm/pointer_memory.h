// Where a pointer's memory lives, asked of the CUDA runtime when weft is built with CUDA
// (cudaPointerGetAttributes; never guessed from the stream), and copies that work for both.
#pragma once

#include <cstddef>

#include "nccl.h"

namespace weft {

// True when `pointer` is CUDA device memory (always false without CUDA).
bool isDevicePointer(const void* pointer);
// Copies `bytes` from host or device memory into host memory.
ncclResult_t copyToHost(void* dst, const void* src, size_t bytes);

}  // namespace weft
