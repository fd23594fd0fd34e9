#include "algorithms/collective_schedule.h"


#include "algorithms/builders/allgather.h"
#include "algorithms/builders/alltoall.h"
#include "algorithms/builders/broadcast.h"
#include "algorithms/builders/direct_allreduce.h"
#include "algorithms/builders/gather_scatter.h"
#include "algorithms/builders/hierarchical_allreduce.h"
#include "algorithms/builders/reduce_to_root.h"
#include "algorithms/builders/reduce_scatter.h"
#include "algorithms/builders/rhd_allreduce.h"
#include "algorithms/builders/ring_allreduce.h"
#include "algorithms/builders/tree_allreduce.h"

namespace weft {

namespace {

Schedule allReduce(Algorithm a, const CollectiveShape& s, const std::vector<int>& order) {
  std::vector<std::vector<int>> nodes = s.nodes;
  if (nodes.empty()) nodes.push_back(order);
  switch (a) {
    case Algorithm::Tree: return buildTreeAllReduce({s.count, s.elementSize, s.rank, order, s.average});
    case Algorithm::Rhd: return buildRhdAllReduce({s.count, s.elementSize, s.rank, order, s.average});
    case Algorithm::Hier: return buildHierarchicalAllReduce({s.count, s.elementSize, s.rank, nodes, s.average});
    case Algorithm::Direct: return buildDirectAllReduce({s.count, s.elementSize, s.rank, s.nranks, s.average});
    default: return buildRingAllReduce({s.count, s.elementSize, s.rank, order, s.average, s.preScale, s.channels, s.nodes});
  }
}

}  // namespace

Schedule buildCollectiveSchedule(Algorithm algorithm, const CollectiveShape& s, Algorithm* ran) {
  Algorithm a = algorithmApplies(s.collective, algorithm) ? algorithm : defaultAlgorithm(s.collective);
  if (s.collective == Collective::AllReduce && s.preScale) a = Algorithm::Ring;
  if (ran) *ran = a;
  const std::vector<int> order = orderOrIdentity(s.order, s.nranks);
  switch (s.collective) {
    case Collective::AllReduce: return allReduce(a, s, order);
    case Collective::AllGather: {
      const AllGatherParams p{s.count, s.elementSize, s.rank, s.nranks, order, s.inPlace, s.nodes, s.channels};
      if (a == Algorithm::Rhd) return buildRecursiveDoublingAllGather(p);
      if (a == Algorithm::Bruck) return buildBruckAllGather(p);
      if (a == Algorithm::Hier) return buildHierarchicalAllGather(p);
      return buildRingAllGather(p);
    }
    case Collective::ReduceScatter: {
      const ReduceScatterParams p{s.count,   s.elementSize, s.rank,    s.nranks, order,
                                  s.average, s.preScale,    s.inPlace, s.nodes,  s.channels};
      if (a == Algorithm::Rhd) return buildRecursiveHalvingReduceScatter(p);
      if (a == Algorithm::Hier) return buildHierarchicalReduceScatter(p);
      return buildRingReduceScatter(p);
    }
    case Collective::Broadcast: {
      const BroadcastParams p{s.count, s.elementSize, s.rank, s.nranks, s.root, order};
      return a == Algorithm::Binomial ? buildBinomialBroadcast(p) : buildChainBroadcast(p);
    }
    case Collective::Reduce: {
      const ReduceParams p{s.count, s.elementSize, s.rank, s.nranks, s.root, order, s.average, s.preScale};
      return a == Algorithm::Binomial ? buildBinomialReduce(p) : buildChainReduce(p);
    }
    case Collective::AllToAll: {
      const AllToAllParams p{s.count, s.elementSize, s.rank, s.nranks, s.inPlace};
      return a == Algorithm::Bruck ? buildBruckAllToAll(p) : buildPairwiseAllToAll(p);
    }
    case Collective::Gather: return buildLinearGather({s.count, s.elementSize, s.rank, s.nranks, s.root, s.inPlace});
    case Collective::Scatter: return buildLinearScatter({s.count, s.elementSize, s.rank, s.nranks, s.root, s.inPlace});
    case Collective::Count: break;
  }
  return {};
}

Schedule buildAllReduceSchedule(Algorithm algorithm, const AllReduceShape& s) {
  CollectiveShape shape;
  shape.count = s.count;
  shape.elementSize = s.elementSize;
  shape.rank = s.rank;
  shape.nranks = s.nranks;
  shape.order = s.order;
  shape.nodes = s.nodes;
  shape.average = s.average;
  shape.channels = s.channels;
  return buildCollectiveSchedule(algorithm, shape);
}

}  // namespace weft
