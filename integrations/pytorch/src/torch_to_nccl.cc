#include "torch_to_nccl.h"

#include <ATen/Functions.h>
#include <c10/util/Exception.h>

namespace weft_torch {

ncclDataType_t ncclTypeOf(const at::Tensor& tensor) {
  switch (tensor.scalar_type()) {
    case at::kChar: return ncclInt8;
    case at::kByte: return ncclUint8;
    case at::kBool: return ncclUint8;
    case at::kInt: return ncclInt32;
    case at::kLong: return ncclInt64;
    case at::kHalf: return ncclFloat16;
    case at::kFloat: return ncclFloat32;
    case at::kDouble: return ncclFloat64;
    case at::kBFloat16: return ncclBfloat16;
    default: TORCH_CHECK(false, "weft: tensors of dtype ", tensor.scalar_type(), " are not supported");
  }
}

ncclRedOp_t ncclOpOf(const c10d::ReduceOp& op, const at::Tensor& tensor, ncclComm_t comm, bool* created) {
  *created = false;
  const bool isBool = tensor.scalar_type() == at::kBool;
  switch (op.op_) {
    case c10d::ReduceOp::SUM: return isBool ? ncclMax : ncclSum;
    case c10d::ReduceOp::PRODUCT: return isBool ? ncclMin : ncclProd;
    case c10d::ReduceOp::MIN: return ncclMin;
    case c10d::ReduceOp::MAX: return ncclMax;
    case c10d::ReduceOp::AVG: TORCH_CHECK(!isBool, "weft: AVG is not defined for bool tensors"); return ncclAvg;
    case c10d::ReduceOp::PREMUL_SUM: {
      auto* supplement = dynamic_cast<c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
      TORCH_CHECK(supplement, "weft: PREMUL_SUM without its factor");
      const ncclDataType_t type = ncclTypeOf(tensor);
      ncclRedOp_t result;
      ncclResult_t status;
      if (!supplement->tensor_factors.empty()) {
        // A factor tensor: its value now, as this rank's host scalar.
        at::Tensor factor = supplement->tensor_factors[0].to(tensor.scalar_type()).contiguous();
        status = ncclRedOpCreatePreMulSum(&result, factor.data_ptr(), type, ncclScalarHostImmediate, comm);
      } else {
        at::Tensor factor = at::scalar_tensor(supplement->double_factor, tensor.options().dtype(tensor.scalar_type()));
        status = ncclRedOpCreatePreMulSum(&result, factor.data_ptr(), type, ncclScalarHostImmediate, comm);
      }
      TORCH_CHECK(status == ncclSuccess, "weft: ", ncclGetLastError(comm));
      *created = true;
      return result;
    }
    default:
      TORCH_CHECK(false, "weft: reduce operator ", static_cast<int>(op.op_),
                  " (bitwise) is not supported; NCCL has no bitwise reductions");
  }
}

}  // namespace weft_torch
