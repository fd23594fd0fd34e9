#include "runtime/group_simulation.h"

#include <algorithm>
#include <map>

#include "algorithms/algorithm_selection.h"
#include "algorithms/cost_model.h"
#include "common/dtype.h"
#include "runtime/call_schedule.h"
#include "runtime/communicator.h"

namespace weft {

namespace {

// A collective priced by the all-reduce whose traffic it matches: all-gather, reduce-scatter,
// all-to-all, gather and scatter move (n-1)/n of the total once, half a ring all-reduce of the
// total; a pipelined broadcast or reduce moves the buffer once along the chain, half a ring
// all-reduce of the buffer; a send/recv pair is one link crossing.
double predictCallMicroseconds(const CollectiveCall& call) {
  ncclComm* comm = call.comm;
  const size_t bytes = call.count * dataTypeSize(call.datatype);
  CostInput input;
  input.nranks = comm->nranks;
  for (const auto& node : comm->nodes) input.nodeSizes.push_back(static_cast<int>(node.size()));
  switch (call.kind) {
    case CollectiveKind::AllReduce: {
      AllReduceAlgorithm algorithm = AllReduceAlgorithm::Ring;
      if (selectAllReduce(call, &algorithm) != ncclSuccess) algorithm = AllReduceAlgorithm::Ring;
      input.bytes = bytes;
      return predictAllReduceUs(algorithm, input, comm->costModel);
    }
    case CollectiveKind::AllGather:
    case CollectiveKind::ReduceScatter:
    case CollectiveKind::AllToAll:
    case CollectiveKind::Gather:
    case CollectiveKind::Scatter:
      input.bytes = bytes * comm->nranks;
      return predictAllReduceUs(AllReduceAlgorithm::Ring, input, comm->costModel) / 2;
    case CollectiveKind::Broadcast:
    case CollectiveKind::Reduce:
      input.bytes = bytes;
      return predictAllReduceUs(AllReduceAlgorithm::Ring, input, comm->costModel) / 2;
    case CollectiveKind::Send:
    case CollectiveKind::Recv:
      input.nranks = 2;
      input.nodeSizes.clear();
      input.bytes = bytes;
      return predictAllReduceUs(AllReduceAlgorithm::Ring, input, comm->costModel) / 2;
  }
  return 0;
}

}  // namespace

double predictGroupMicroseconds(const std::vector<CollectiveCall>& calls) {
  std::map<ncclComm*, double> perComm;
  for (const auto& call : calls) perComm[call.comm] += predictCallMicroseconds(call);
  double longest = 0;
  for (const auto& [comm, us] : perComm) longest = std::max(longest, us);
  return longest;
}

}  // namespace weft
