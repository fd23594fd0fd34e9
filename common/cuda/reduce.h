// Reductions on device memory, queued on a CUDA stream (built when WEFT_HAVE_CUDA): the same
// operations as common/reduce.h, with the same results for every type and operator, because
// the kernels use the same element arithmetic (common/reduce_element.h, numeric.h's
// conversions; half, bfloat16 and fp8 compute in float and round once per element).
// A NaN that a sum or product produces may differ in sign and payload: the GPU's arithmetic
// returns its canonical NaN (0x7fffffff; half then stores 0x7fff), the CPU keeps an operand's.
//
// Pointers are device pointers (or host memory the device reaches); `stream` is a
// cudaStream_t (null: the current device's legacy stream). Each call returns once the kernel is
// queued; nothing waits for it. Errors: ncclInvalidArgument for a bad type or operator,
// ncclUnhandledCudaError when the launch fails (with the CUDA error in ncclGetLastError).
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/reduce.h"
#include "nccl.h"

namespace weft::cuda {

// dst[i] = a[i] op b[i]; dst may be a or b (never a partial overlap).
ncclResult_t reduceBuffers(void* dst, const void* a, const void* b, size_t count, ncclDataType_t type, ReduceOp op,
                           void* stream);

// Where PreMulSum's factor is: read by the kernel when it runs (ncclScalarDevice: device or
// mapped host memory), or read now from host memory (ncclScalarHostImmediate).
enum class ScalarAt { Device, HostNow };

// dst[i] = src[i] * scalar, the scalar one element of `type`; dst may equal src.
ncclResult_t scaleBuffer(void* dst, const void* src, size_t count, ncclDataType_t type, const void* scalar,
                         ScalarAt scalarAt, void* stream);

// dst[i] = src[i] / divisor (ncclAvg's second half, reduce.h's rules; 0 counts as 1).
ncclResult_t divideBuffer(void* dst, const void* src, size_t count, ncclDataType_t type, uint64_t divisor,
                          void* stream);

}  // namespace weft::cuda
