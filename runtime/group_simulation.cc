#include "runtime/group_simulation.h"

#include <algorithm>
#include <map>

#include "algorithms/algorithm_selection.h"
#include "algorithms/collective_cost.h"
#include "algorithms/cost_model.h"
#include "common/dtype.h"
#include "runtime/call_schedule.h"
#include "runtime/communicator.h"

namespace weft {

namespace {

// A collective priced by the cost model for the algorithm selection would pick; a send/recv
// pair as one link crossing (half a two-rank ring all-reduce).
double predictCallMicroseconds(const CollectiveCall& call) {
  ncclComm* comm = call.comm;
  CostInput input;
  input.nranks = comm->nranks;
  for (const auto& node : comm->nodes) input.nodeSizes.push_back(static_cast<int>(node.size()));
  if (call.kind == CollectiveKind::Send || call.kind == CollectiveKind::Recv) {
    input.nranks = 2;
    input.nodeSizes.clear();
    input.bytes = call.count * dataTypeSize(call.datatype);
    return predictAllReduceUs(Algorithm::Ring, input, comm->costModel) / 2;
  }
  const Collective collective = costCollective(call);
  Algorithm algorithm = defaultAlgorithm(collective);
  if (selectForCall(call, &algorithm) != ncclSuccess) algorithm = defaultAlgorithm(collective);
  input.bytes = costBytes(call);
  return predictCollectiveUs(collective, algorithm, input, comm->costModel);
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
