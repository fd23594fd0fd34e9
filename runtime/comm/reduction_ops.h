// Reduction operators of a call: the built-in ones, and those made by
// ncclRedOpCreatePreMulSum (sum of inputs each multiplied by a scalar), which live in a
// per-communicator table and are named by ncclNumOps + index, as in NCCL.
#pragma once

#include <cstdint>
#include <vector>

#include "nccl.h"
#include "runtime/exec/collective.h"
#include "runtime/exec/executor.h"

namespace weft {

struct PreMulSumOp {
  bool live = false;
  ncclDataType_t datatype = ncclFloat32;
  PreMulSumScalar scalar;
};

ncclResult_t createPreMulSum(ncclComm* comm, ncclRedOp_t* op, const void* scalar, ncclDataType_t datatype,
                             ncclScalarResidence_t residence);
ncclResult_t destroyReductionOp(ncclComm* comm, ncclRedOp_t op);
// ncclInvalidArgument unless `op` is built in or a live operator of `comm` for `datatype`.
ncclResult_t checkReductionOpFor(ncclComm* comm, ncclRedOp_t op, ncclDataType_t datatype, const char* function);
// The scalar a call with `op` (checked by checkReductionOpFor) keeps; none for built-in ops.
PreMulSumScalar preMulSumScalarOf(ncclComm* comm, ncclRedOp_t op);
// What the executor needs to apply the call's operator (a device-resident scalar is read now).
ncclResult_t resolveReduction(const CollectiveCall& call, RunReduction* out);

}  // namespace weft
