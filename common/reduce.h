// Element-wise reduction kernels on host memory: the arithmetic of every collective.
//
// Integer types wrap (two's complement, no undefined behaviour). half, bfloat16 and fp8
// compute in float and round once per element per call; float computes in float and double
// in double. Max/Min propagate NaN: if either input is NaN the result is NaN (NCCL's device
// code uses fmaxf/fminf for half, which drop a NaN; we keep it so a diverged rank is seen
// everywhere, and the result does not depend on the order of the ranks).
//
// The kernels are vectorized for the CPU they run on (AVX-512, AVX2+F16C, or portable code),
// chosen once; WEFT_KERNEL_ISA=portable|avx2|avx512 caps the choice.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl.h"

namespace weft {

enum class ReduceOp { Sum, Prod, Max, Min };

// dst[i] = a[i] op b[i] for i < count. dst may be the same pointer as a or b (never a partial
// overlap). `type` must be valid.
void reduceBuffers(void* dst, const void* a, const void* b, size_t count, ncclDataType_t type, ReduceOp op);

// dst[i] = dst2[i] = a[i] op b[i] over `lines` whole 64-byte lines (kReduceLineBytes each), both
// destinations aligned to 64 bytes; either may be the same pointer as a or b. Written with
// non-temporal stores where the instruction set has them, line by line (no fence: the caller
// fences, common/streaming_copy.h). For common/reduce_to_two.h, which handles the rest.
constexpr size_t kReduceLineBytes = 64;
void reduceLinesToTwoStreaming(void* dst, void* dst2, const void* a, const void* b, size_t lines, ncclDataType_t type,
                               ReduceOp op);

// dst[i] = src[i] * scalar (PreMulSum), with `scalar` one element of `type`; dst may equal src.
void scaleBuffer(void* dst, const void* src, size_t count, ncclDataType_t type, const void* scalar);

// dst[i] = src[i] / divisor (the second half of ncclAvg); dst may equal src. Integer types use
// integer division truncating toward zero, as NCCL does; floating types divide in their compute
// precision. A divisor of 0 is treated as 1.
void divideBuffer(void* dst, const void* src, size_t count, ncclDataType_t type, uint64_t divisor);

// The instruction set the kernels use.
enum class KernelIsa { Portable, Avx2, Avx512 };
KernelIsa kernelIsa();
const char* kernelIsaName(KernelIsa isa);
bool kernelIsaSupported(KernelIsa isa);
// For tests and benchmarks: use `isa` from now on (all threads). False, and no change, when
// this CPU cannot run it.
bool setKernelIsa(KernelIsa isa);

}  // namespace weft
