// Collective and point-to-point entry points: check arguments (naming the one at fault), then
// run, or queue inside a group.
#include "common/dtype.h"
#include "common/status.h"
#include "nccl.h"
#include "runtime/api/api_call.h"
#include "runtime/api/argument_checks.h"
#include "runtime/api/export.h"
#include "runtime/comm/communicator.h"
#include "runtime/comm/reduction_ops.h"
#include "runtime/exec/group.h"

using namespace weft;

namespace {

enum class CountSpan { OneBlock, BlockPerRank };

// Checks shared by every call: communicator, datatype, and that count elements (times nranks
// for collectives whose buffers hold a block per rank) fit in memory.
ncclResult_t checkCommon(ncclComm_t comm, ncclDataType_t datatype, size_t count, CountSpan span, const char* countName,
                         const char* function) {
  WEFT_CHECK(checkCommunicator(comm));
  WEFT_CHECK(checkDataType(datatype, function));
  size_t multiplier = span == CountSpan::BlockPerRank ? static_cast<size_t>(comm->nranks) : 1;
  return checkCount(count, datatype, multiplier, countName, function);
}

ncclResult_t checkRoot(ncclComm_t comm, int root, const char* function) {
  if (root < 0 || root >= comm->nranks)
    return fail(ncclInvalidArgument, "%s: root=%d is not a rank of this communicator (0..%d)", function, root,
                comm->nranks - 1);
  return ncclSuccess;
}

ncclResult_t submit(CallKind kind, ncclComm_t comm, cudaStream_t stream, const void* sendbuff, void* recvbuff,
                    size_t count, ncclDataType_t datatype, ncclRedOp_t op = ncclSum, int root = -1, int peer = -1) {
  CollectiveCall call = makeCall(kind, comm, sendbuff, recvbuff, count, datatype, op, root, peer);
  call.preMulSum = preMulSumScalarOf(comm, op);
  call.stream = stream;
  return submitCollective(call);
}

}  // namespace

WEFT_API ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                    ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return apiCall("ncclAllReduce", [&]() -> ncclResult_t {
    constexpr const char* kName = "ncclAllReduce";
    WEFT_CHECK(checkCommon(comm, datatype, count, CountSpan::OneBlock, "count", kName));
    WEFT_CHECK(checkReductionOpFor(comm, op, datatype, kName));
    WEFT_CHECK(checkBuffer(sendbuff, count, "sendbuff", kName));
    WEFT_CHECK(checkBuffer(recvbuff, count, "recvbuff", kName));
    return submit(Collective::AllReduce, comm, stream, sendbuff, recvbuff, count, datatype, op);
  });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count,
                     ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);

WEFT_API ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                    int root, ncclComm_t comm, cudaStream_t stream) {
  return apiCall("ncclBroadcast", [&]() -> ncclResult_t {
    constexpr const char* kName = "ncclBroadcast";
    WEFT_CHECK(checkCommon(comm, datatype, count, CountSpan::OneBlock, "count", kName));
    WEFT_CHECK(checkRoot(comm, root, kName));
    if (comm->rank == root) WEFT_CHECK(checkBuffer(sendbuff, count, "sendbuff", kName));
    WEFT_CHECK(checkBuffer(recvbuff, count, "recvbuff", kName));
    return submit(Collective::Broadcast, comm, stream, sendbuff, recvbuff, count, datatype, ncclSum, root);
  });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count,
                     ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);

WEFT_API ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                                cudaStream_t stream) {
  return apiCall("ncclBcast",
                 [&]() -> ncclResult_t { return ncclBroadcast(buff, buff, count, datatype, root, comm, stream); });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root,
                     ncclComm_t comm, cudaStream_t stream);

WEFT_API ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                 ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return apiCall("ncclReduce", [&]() -> ncclResult_t {
    constexpr const char* kName = "ncclReduce";
    WEFT_CHECK(checkCommon(comm, datatype, count, CountSpan::OneBlock, "count", kName));
    WEFT_CHECK(checkReductionOpFor(comm, op, datatype, kName));
    WEFT_CHECK(checkRoot(comm, root, kName));
    WEFT_CHECK(checkBuffer(sendbuff, count, "sendbuff", kName));
    if (comm->rank == root) WEFT_CHECK(checkBuffer(recvbuff, count, "recvbuff", kName));
    return submit(Collective::Reduce, comm, stream, sendbuff, recvbuff, count, datatype, op, root);
  });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count,
                     ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);

WEFT_API ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                                    ncclComm_t comm, cudaStream_t stream) {
  return apiCall("ncclAllGather", [&]() -> ncclResult_t {
    constexpr const char* kName = "ncclAllGather";
    WEFT_CHECK(checkCommon(comm, datatype, sendcount, CountSpan::BlockPerRank, "sendcount", kName));
    WEFT_CHECK(checkBuffer(sendbuff, sendcount, "sendbuff", kName));
    WEFT_CHECK(checkBuffer(recvbuff, sendcount, "recvbuff", kName));
    return submit(Collective::AllGather, comm, stream, sendbuff, recvbuff, sendcount, datatype);
  });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount,
                     ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);

WEFT_API ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                                        ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return apiCall("ncclReduceScatter", [&]() -> ncclResult_t {
    constexpr const char* kName = "ncclReduceScatter";
    WEFT_CHECK(checkCommon(comm, datatype, recvcount, CountSpan::BlockPerRank, "recvcount", kName));
    WEFT_CHECK(checkReductionOpFor(comm, op, datatype, kName));
    WEFT_CHECK(checkBuffer(sendbuff, recvcount, "sendbuff", kName));
    WEFT_CHECK(checkBuffer(recvbuff, recvcount, "recvbuff", kName));
    return submit(Collective::ReduceScatter, comm, stream, sendbuff, recvbuff, recvcount, datatype, op);
  });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
                     ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);

WEFT_API ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                   ncclComm_t comm, cudaStream_t stream) {
  return apiCall("ncclAlltoAll", [&]() -> ncclResult_t {
    constexpr const char* kName = "ncclAlltoAll";
    WEFT_CHECK(checkCommon(comm, datatype, count, CountSpan::BlockPerRank, "count", kName));
    WEFT_CHECK(checkBuffer(sendbuff, count, "sendbuff", kName));
    WEFT_CHECK(checkBuffer(recvbuff, count, "recvbuff", kName));
    return submit(Collective::AllToAll, comm, stream, sendbuff, recvbuff, count, datatype);
  });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count,
                     ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);

WEFT_API ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                                 ncclComm_t comm, cudaStream_t stream) {
  return apiCall("ncclGather", [&]() -> ncclResult_t {
    constexpr const char* kName = "ncclGather";
    WEFT_CHECK(checkCommon(comm, datatype, count, CountSpan::BlockPerRank, "count", kName));
    WEFT_CHECK(checkRoot(comm, root, kName));
    WEFT_CHECK(checkBuffer(sendbuff, count, "sendbuff", kName));
    if (comm->rank == root) WEFT_CHECK(checkBuffer(recvbuff, count, "recvbuff", kName));
    return submit(Collective::Gather, comm, stream, sendbuff, recvbuff, count, datatype, ncclSum, root);
  });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count,
                     ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);

WEFT_API ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                                  ncclComm_t comm, cudaStream_t stream) {
  return apiCall("ncclScatter", [&]() -> ncclResult_t {
    constexpr const char* kName = "ncclScatter";
    WEFT_CHECK(checkCommon(comm, datatype, count, CountSpan::BlockPerRank, "count", kName));
    WEFT_CHECK(checkRoot(comm, root, kName));
    if (comm->rank == root) WEFT_CHECK(checkBuffer(sendbuff, count, "sendbuff", kName));
    WEFT_CHECK(checkBuffer(recvbuff, count, "recvbuff", kName));
    return submit(Collective::Scatter, comm, stream, sendbuff, recvbuff, count, datatype, ncclSum, root);
  });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count,
                     ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);

namespace {
ncclResult_t checkPeer(ncclComm_t comm, int peer, const char* function) {
  if (peer < 0 || peer >= comm->nranks)
    return fail(ncclInvalidArgument, "%s: peer=%d is not a rank of this communicator (0..%d)", function, peer,
                comm->nranks - 1);
  return ncclSuccess;
}
}  // namespace

WEFT_API ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                               cudaStream_t stream) {
  return apiCall("ncclSend", [&]() -> ncclResult_t {
    constexpr const char* kName = "ncclSend";
    WEFT_CHECK(checkCommon(comm, datatype, count, CountSpan::OneBlock, "count", kName));
    WEFT_CHECK(checkPeer(comm, peer, kName));
    WEFT_CHECK(checkBuffer(sendbuff, count, "sendbuff", kName));
    return submit(PointToPoint::Send, comm, stream, sendbuff, nullptr, count, datatype, ncclSum, -1, peer);
  });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                     ncclComm_t comm, cudaStream_t stream);

WEFT_API ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                               cudaStream_t stream) {
  return apiCall("ncclRecv", [&]() -> ncclResult_t {
    constexpr const char* kName = "ncclRecv";
    WEFT_CHECK(checkCommon(comm, datatype, count, CountSpan::OneBlock, "count", kName));
    WEFT_CHECK(checkPeer(comm, peer, kName));
    WEFT_CHECK(checkBuffer(recvbuff, count, "recvbuff", kName));
    return submit(PointToPoint::Recv, comm, stream, nullptr, recvbuff, count, datatype, ncclSum, -1, peer);
  });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                     ncclComm_t comm, cudaStream_t stream);

WEFT_API ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                               ncclScalarResidence_t residence, ncclComm_t comm) {
  return apiCall("ncclRedOpCreatePreMulSum", [&]() -> ncclResult_t {
    WEFT_CHECK(checkCommunicator(comm));
    return createPreMulSum(comm, op, scalar, datatype, residence);
  });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                     ncclScalarResidence_t residence, ncclComm_t comm);

WEFT_API ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  return apiCall("ncclRedOpDestroy", [&]() -> ncclResult_t {
    WEFT_CHECK(checkCommunicator(comm));
    return destroyReductionOp(comm, op);
  });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm);
