#include "runtime/exec/group_simulation.h"

#include <algorithm>
#include <map>

#include "algorithms/cost/algorithm_selection.h"
#include "algorithms/cost/collective_cost.h"
#include "algorithms/cost/cost_model.h"
#include "common/dtype.h"
#include "runtime/comm/communicator.h"
#include "runtime/exec/call_schedule.h"

namespace weft {

namespace {

// A collective priced by the cost model for the algorithm selection would pick; a send/recv
// pair as one link crossing (half a two-rank ring all-reduce).
double predictCallMicroseconds(const CollectiveCall& call) {
  ncclComm* comm = call.comm;
  if (call.kind.isPointToPoint()) {
    const CostInput pair{call.count * dataTypeSize(call.datatype), 2, {}};
    return predictAllReduceUs(Algorithm::Ring, pair, comm->layout.costModel) / 2;
  }
  const Collective collective = costCollective(call);
  Algorithm algorithm = defaultAlgorithm(collective);
  if (selectForCall(call, &algorithm) != ncclSuccess) algorithm = defaultAlgorithm(collective);
  return predictCollectiveUs(collective, algorithm, costInputFor(costBytes(call), comm->nranks, comm->layout.nodes),
                             comm->layout.costModel);
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
