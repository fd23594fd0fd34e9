// Collective entry points: check arguments, then run (or queue inside a group).
#include "common/status.h"
#include "nccl.h"
#include "runtime/api_export.h"
#include "runtime/argument_checks.h"
#include "runtime/communicator.h"
#include "runtime/group.h"

using namespace weft;

WEFT_API ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                    ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  constexpr const char* kName = "ncclAllReduce";
  WEFT_CHECK(checkCommunicator(comm));
  WEFT_CHECK(checkDataType(datatype, kName));
  WEFT_CHECK(checkReductionOp(op, kName));
  WEFT_CHECK(checkCount(count, datatype, 1, "count", kName));
  WEFT_CHECK(checkBuffer(sendbuff, count, "sendbuff", kName));
  WEFT_CHECK(checkBuffer(recvbuff, count, "recvbuff", kName));
  CollectiveCall call;
  call.kind = CollectiveKind::AllReduce;
  call.comm = comm;
  call.sendbuff = sendbuff;
  call.recvbuff = recvbuff;
  call.count = count;
  call.datatype = datatype;
  call.op = op;
  return submitCollective(call);
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count,
                     ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
