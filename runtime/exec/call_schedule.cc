#include "runtime/exec/call_schedule.h"

#include <algorithm>
#include <cstdint>

#include "algorithms/algorithm_registry.h"
#include "algorithms/builders/point_to_point.h"
#include "algorithms/collective_schedule.h"
#include "algorithms/cost/algorithm_selection.h"
#include "common/dtype.h"
#include "common/status.h"
#include "runtime/comm/communicator.h"

namespace weft {

bool callIsInPlace(const CollectiveCall& call) {
  const char* send = static_cast<const char*>(call.sendbuff);
  const char* recv = static_cast<const char*>(call.recvbuff);
  const size_t stride = blockStrideBytes(call);
  const int rank = call.comm->rank;
  switch (call.kind.collective()) {
    case Collective::AllGather: return recv && send == recv + static_cast<size_t>(rank) * stride;
    case Collective::ReduceScatter: return send && recv == send + static_cast<size_t>(rank) * stride;
    case Collective::Gather: return rank == call.root && recv && send == recv + call.root * stride;
    case Collective::Scatter: return rank == call.root && send && recv == send + call.root * stride;
    default: return send == recv;
  }
}

CollectiveCall contiguousView(const CollectiveCall& call) {
  if (!call.blockStride) return call;
  const bool inPlace = callIsInPlace(call);
  CollectiveCall view = call;
  view.blockStride = 0;
  if (inPlace && call.kind.collective() != Collective::AllToAll) {  // an all-to-all in place: one pointer
    const size_t ownBlock = static_cast<size_t>(call.comm->rank) * call.count * dataTypeSize(call.datatype);
    const Collective collective = call.kind.collective();
    if (collective == Collective::AllGather || collective == Collective::Gather)
      view.sendbuff = static_cast<const char*>(call.recvbuff) + ownBlock;
    else
      view.recvbuff = const_cast<char*>(static_cast<const char*>(call.sendbuff)) + ownBlock;
  }
  return view;
}

bool sendAliasesRecv(const CollectiveCall& call) {
  switch (call.kind.collective()) {
    case Collective::AllReduce:
    case Collective::Broadcast:
    case Collective::Reduce: return call.sendbuff == call.recvbuff;
    case Collective::AllToAll: return false;  // the builder works in place itself
    default: return false;                    // in-place rules are block offsets, handled by builders
  }
}

Collective costCollective(const CollectiveCall& call) {
  return call.kind.isPointToPoint() ? Collective::AllReduce : call.kind.collective();
}

size_t costBytes(const CollectiveCall& call) {
  const size_t bytes = call.count * dataTypeSize(call.datatype);
  return sizeCountsEveryRank(costCollective(call)) ? bytes * static_cast<size_t>(call.comm->nranks) : bytes;
}

ncclResult_t selectForCall(const CollectiveCall& call, Algorithm* out) {
  ncclComm* comm = call.comm;
  SelectionInput input;
  input.collective = costCollective(call);
  input.bytes = costBytes(call);
  input.nranks = comm->nranks;
  input.nodes = comm->layout.nodes;
  input.model = comm->layout.costModel;
  input.directAvailable = false;  // decided per call by the direct path's handshake instead
  input.ncclAlgo = comm->agreed.ncclAlgo;
  input.weftAlgo = comm->agreed.weftAlgo;
  AlgorithmChoice choice;
  WEFT_CHECK(selectAlgorithm(input, &choice));
  // An algorithm that needs mapped buffers runs only where the direct path's handshake says so.
  *out = algorithmInfo(choice.algorithm).needsMappedPeers ? defaultAlgorithm(input.collective) : choice.algorithm;
  return ncclSuccess;
}

Schedule scheduleForCall(const CollectiveCall& call, Algorithm selected, const char** algorithm) {
  ncclComm* comm = call.comm;
  const size_t elementSize = dataTypeSize(call.datatype);
  if (call.kind.isPointToPoint()) {  // preparePointToPoint
    *algorithm = "?";
    return {};
  }
  const CollectiveShape shape{
      .collective = costCollective(call),
      .count = call.count,
      .elementSize = elementSize,
      .rank = comm->rank,
      .nranks = comm->nranks,
      .root = call.root,
      .order = comm->layout.ringOrder,
      .nodes = comm->layout.nodes,
      .average = call.op == ncclAvg,
      .preScale = call.op >= ncclNumOps,
      .inPlace = callIsInPlace(call),
      .channels = comm->layout.costModel.ringChannels(comm->layout.nodes, static_cast<double>(costBytes(call))),
      .pieceChunkBytes = comm->agreed.ringPieceBytes,
      .blockStride = call.blockStride,
  };
  Algorithm ran = selected;
  Schedule schedule = buildCollectiveSchedule(selected, shape, &ran);
  *algorithm = algorithmName(ran);
  return schedule;
}

PointToPointParams pointToPointParamsOf(const std::vector<const CollectiveCall*>& calls) {
  PointToPointParams params;
  params.rank = calls.front()->comm->rank;
  for (const CollectiveCall* call : calls) {
    bool send = call->kind.isSend();
    uintptr_t address = reinterpret_cast<uintptr_t>(send ? call->sendbuff : call->recvbuff);
    params.ops.push_back(
        {.peer = call->peer, .bytes = call->count * dataTypeSize(call->datatype), .send = send, .offset = address});
  }
  return params;
}

ncclResult_t preparePointToPoint(const PointToPointParams& params, size_t sliceBytes, PreparedSchedule* out) {
  Schedule schedule;
  std::string error;
  if (!buildPointToPoint(params, &schedule, &error))
    return fail(ncclInvalidUsage, "send/recv group: %s", error.c_str());
  // Null bases: a send range and a receive range at the same addresses are the same memory, and
  // the hazard analysis must compare them as one buffer: a receive into a buffer still being
  // sent (an in-place exchange) then waits for the send to take each slice first.
  prepareSchedule(std::move(schedule), /*sendAliasesRecv=*/true, sliceBytes, out);
  out->algorithm = "point to point";
  return ncclSuccess;
}

}  // namespace weft
