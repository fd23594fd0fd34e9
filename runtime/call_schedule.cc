#include "runtime/call_schedule.h"

#include <cstdint>

#include "algorithms/algorithm_selection.h"
#include "algorithms/allgather.h"
#include "algorithms/alltoall.h"
#include "algorithms/broadcast.h"
#include "algorithms/direct_allreduce.h"
#include "algorithms/gather_scatter.h"
#include "algorithms/point_to_point.h"
#include "algorithms/reduce.h"
#include "algorithms/reduce_scatter.h"
#include "algorithms/ring_allreduce.h"
#include "common/dtype.h"
#include "common/status.h"
#include "runtime/communicator.h"

namespace weft {

bool callIsInPlace(const CollectiveCall& call) {
  const char* send = static_cast<const char*>(call.sendbuff);
  const char* recv = static_cast<const char*>(call.recvbuff);
  size_t block = call.count * dataTypeSize(call.datatype);
  int rank = call.comm->rank;
  switch (call.kind) {
    case CollectiveKind::AllGather: return recv && send == recv + rank * block;
    case CollectiveKind::ReduceScatter: return send && recv == send + rank * block;
    case CollectiveKind::Gather: return rank == call.root && recv && send == recv + call.root * block;
    case CollectiveKind::Scatter: return rank == call.root && send && recv == send + call.root * block;
    default: return send == recv;
  }
}

bool sendAliasesRecv(const CollectiveCall& call) {
  switch (call.kind) {
    case CollectiveKind::AllReduce:
    case CollectiveKind::Broadcast:
    case CollectiveKind::Reduce: return call.sendbuff == call.recvbuff;
    case CollectiveKind::AllToAll: return false;  // the builder works in place itself
    default: return false;                        // in-place rules are block offsets, handled by builders
  }
}

ncclResult_t selectAllReduce(const CollectiveCall& call, AllReduceAlgorithm* out) {
  ncclComm* comm = call.comm;
  SelectionInput input;
  input.bytes = call.count * dataTypeSize(call.datatype);
  input.nranks = comm->nranks;
  input.nodes = comm->nodes;
  input.model = comm->costModel;
  input.directAvailable = false;  // decided per call by the direct path's handshake instead
  readAlgorithmEnv(&input);
  AlgorithmChoice choice;
  WEFT_CHECK(selectAllReduceAlgorithm(input, &choice));
  *out = choice.algorithm == AllReduceAlgorithm::Direct ? AllReduceAlgorithm::Ring : choice.algorithm;
  return ncclSuccess;
}

Schedule scheduleForCall(const CollectiveCall& call, bool direct, AllReduceAlgorithm selected, const char** algorithm) {
  ncclComm* comm = call.comm;
  const size_t elementSize = dataTypeSize(call.datatype);
  const int rank = comm->rank;
  const int n = comm->nranks;
  const bool average = call.op == ncclAvg;
  const bool preScale = call.op >= ncclNumOps;
  const bool inPlace = callIsInPlace(call);
  switch (call.kind) {
    case CollectiveKind::AllReduce: {
      if (direct) {
        *algorithm = "DIRECT";
        return buildDirectAllReduce({call.count, elementSize, rank, n, average});
      }
      // Only the ring scales inputs for PreMulSum; the other algorithms get the cost model's pick.
      AllReduceAlgorithm chosen = preScale ? AllReduceAlgorithm::Ring : selected;
      *algorithm = allReduceAlgorithmName(chosen);
      if (chosen == AllReduceAlgorithm::Ring)
        return buildRingAllReduce({call.count, elementSize, rank, comm->ringOrder, average, preScale});
      return buildAllReduceSchedule(chosen, {call.count, elementSize, rank, n, comm->ringOrder, comm->nodes, average});
    }
    case CollectiveKind::AllGather:
      *algorithm = "RING";
      return buildRingAllGather({call.count, elementSize, rank, n, comm->ringOrder, inPlace});
    case CollectiveKind::ReduceScatter:
      *algorithm = "RING";
      return buildRingReduceScatter({call.count, elementSize, rank, n, comm->ringOrder, average, preScale, inPlace});
    case CollectiveKind::Broadcast:
      *algorithm = "CHAIN";
      return buildChainBroadcast({call.count, elementSize, rank, n, call.root, comm->ringOrder});
    case CollectiveKind::Reduce:
      *algorithm = "CHAIN";
      return buildChainReduce({call.count, elementSize, rank, n, call.root, comm->ringOrder, average, preScale});
    case CollectiveKind::AllToAll:
      *algorithm = "PAIRWISE";
      return buildPairwiseAllToAll({call.count, elementSize, rank, n, inPlace});
    case CollectiveKind::Gather:
      *algorithm = "LINEAR";
      return buildLinearGather({call.count, elementSize, rank, n, call.root, inPlace});
    case CollectiveKind::Scatter:
      *algorithm = "LINEAR";
      return buildLinearScatter({call.count, elementSize, rank, n, call.root, inPlace});
    case CollectiveKind::Send:
    case CollectiveKind::Recv: break;  // scheduleForPointToPoint
  }
  *algorithm = "?";
  return {};
}

ncclResult_t scheduleForPointToPoint(const std::vector<const CollectiveCall*>& calls, Schedule* schedule) {
  PointToPointParams params;
  params.rank = calls.front()->comm->rank;
  for (const CollectiveCall* call : calls) {
    bool send = call->kind == CollectiveKind::Send;
    uintptr_t address = reinterpret_cast<uintptr_t>(send ? call->sendbuff : call->recvbuff);
    params.ops.push_back({call->peer, call->count * dataTypeSize(call->datatype), send, address});
  }
  std::string error;
  if (!buildPointToPoint(params, schedule, &error)) return fail(ncclInvalidUsage, "send/recv group: %s", error.c_str());
  return ncclSuccess;
}

}  // namespace weft
