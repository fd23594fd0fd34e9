// torch's dtypes and reduce operators as NCCL's (the same mapping as ProcessGroupNCCL): a
// dtype or operator NCCL has no equivalent for is an error naming it.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include "nccl.h"

namespace weft_torch {

ncclDataType_t ncclTypeOf(const at::Tensor& tensor);

// The NCCL operator for `op` on `tensor`'s dtype: PREMUL_SUM becomes a PreMulSum operator made
// on `comm` (*created is then true: destroy it after the call). Bool sums are MAX, as in NCCL's
// process group (a logical or).
ncclRedOp_t ncclOpOf(const c10d::ReduceOp& op, const at::Tensor& tensor, ncclComm_t comm, bool* created);

}  // namespace weft_torch
