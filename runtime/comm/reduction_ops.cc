#include "runtime/comm/reduction_ops.h"

#include <cstring>

#include "common/dtype.h"
#include "common/status.h"
#include "runtime/comm/communicator.h"
#include "runtime/device/device_api.h"

namespace weft {

namespace {

ReduceOp builtinReduceOp(ncclRedOp_t op) {
  switch (op) {
    case ncclProd: return ReduceOp::Prod;
    case ncclMax: return ReduceOp::Max;
    case ncclMin: return ReduceOp::Min;
    default: return ReduceOp::Sum;  // sum, avg (sum then divide), and PreMulSum (scale then sum)
  }
}

PreMulSumOp* findOp(ncclComm* comm, ncclRedOp_t op) {
  size_t index = static_cast<size_t>(op) - ncclNumOps;
  if (static_cast<int>(op) < ncclNumOps || index >= comm->preMulSumOps.size()) return nullptr;
  PreMulSumOp& entry = comm->preMulSumOps[index];
  return entry.live ? &entry : nullptr;
}

}  // namespace

ncclResult_t createPreMulSum(ncclComm* comm, ncclRedOp_t* op, const void* scalar, ncclDataType_t datatype,
                             ncclScalarResidence_t residence) {
  if (!op) return fail(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: op is NULL");
  if (!scalar) return fail(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: scalar is NULL");
  if (!isValidDataType(datatype))
    return fail(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: datatype=%d is invalid", datatype);
  if (residence != ncclScalarHostImmediate && residence != ncclScalarDevice)
    return fail(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: residence=%d is invalid", residence);
  size_t index = 0;
  while (index < comm->preMulSumOps.size() && comm->preMulSumOps[index].live) ++index;
  if (index > static_cast<size_t>(ncclMaxRedOp - ncclNumOps))
    return fail(ncclInvalidUsage, "ncclRedOpCreatePreMulSum: too many live operators (%d)",
                ncclMaxRedOp - ncclNumOps + 1);
  // ncclScalarHostImmediate: the value now. ncclScalarDevice: the address, dereferenced when
  // each collective runs (device memory through the CUDA runtime, host memory directly).
  PreMulSumOp entry;
  entry.live = true;
  entry.datatype = datatype;
  entry.scalar.present = true;
  if (residence == ncclScalarHostImmediate)
    memcpy(entry.scalar.value, scalar, dataTypeSize(datatype));
  else
    entry.scalar.address = scalar;
  if (index == comm->preMulSumOps.size())
    comm->preMulSumOps.push_back(entry);
  else
    comm->preMulSumOps[index] = entry;
  *op = static_cast<ncclRedOp_t>(ncclNumOps + index);
  return ncclSuccess;
}

ncclResult_t destroyReductionOp(ncclComm* comm, ncclRedOp_t op) {
  PreMulSumOp* entry = findOp(comm, op);
  if (!entry)
    return fail(ncclInvalidArgument, "ncclRedOpDestroy: op=%d was not created by ncclRedOpCreatePreMulSum on this comm",
                static_cast<int>(op));
  entry->live = false;
  return ncclSuccess;
}

ncclResult_t checkReductionOpFor(ncclComm* comm, ncclRedOp_t op, ncclDataType_t datatype, const char* function) {
  if (static_cast<int>(op) >= 0 && static_cast<int>(op) < ncclNumOps) return ncclSuccess;
  PreMulSumOp* entry = findOp(comm, op);
  if (!entry)
    return fail(ncclInvalidArgument, "%s: op=%d is neither a built-in ncclRedOp_t nor a live operator of this comm",
                function, static_cast<int>(op));
  if (entry->datatype != datatype)
    return fail(ncclInvalidArgument, "%s: op=%d was created for datatype %s, not %s", function, static_cast<int>(op),
                dataTypeName(entry->datatype), dataTypeName(datatype));
  return ncclSuccess;
}

PreMulSumScalar preMulSumScalarOf(ncclComm* comm, ncclRedOp_t op) {
  PreMulSumOp* entry = findOp(comm, op);
  return entry ? entry->scalar : PreMulSumScalar{};
}

ncclResult_t resolveReduction(const CollectiveCall& call, RunReduction* out) {
  out->type = call.datatype;
  out->op = builtinReduceOp(call.op);
  if (!call.preMulSum.present) return ncclSuccess;
  if (call.preMulSum.address) return copyToHost(out->scalar, call.preMulSum.address, dataTypeSize(call.datatype));
  memcpy(out->scalar, call.preMulSum.value, sizeof out->scalar);
  return ncclSuccess;
}

}  // namespace weft
