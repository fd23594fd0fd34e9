// Marks the few functions that CUDA kernels share with the host code (the narrow-float
// conversions, the reduction operators), so that one definition gives the device and the CPU
// the same bits. Plain host code sees empty macros.
#pragma once

#if defined(__CUDACC__)
#define WEFT_HOST_DEVICE __host__ __device__
#define WEFT_FORCE_INLINE __forceinline__
#else
#define WEFT_HOST_DEVICE
#define WEFT_FORCE_INLINE [[gnu::always_inline]] inline
#endif
