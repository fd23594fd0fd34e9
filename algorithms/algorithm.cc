#include "algorithms/algorithm.h"

namespace weft {

const char* collectiveName(Collective collective) {
  switch (collective) {
    case Collective::AllReduce: return "allreduce";
    case Collective::AllGather: return "allgather";
    case Collective::ReduceScatter: return "reducescatter";
    case Collective::Broadcast: return "broadcast";
    case Collective::Reduce: return "reduce";
    case Collective::AllToAll: return "alltoall";
    case Collective::Gather: return "gather";
    case Collective::Scatter: return "scatter";
    case Collective::Count: break;
  }
  return "?";
}

// algorithmName, algorithmApplies, defaultAlgorithm and algorithmsOf read the registry
// (algorithms/algorithm_registry.cc).

bool sendHoldsRankBlocks(Collective collective) {
  return collective == Collective::ReduceScatter || collective == Collective::AllToAll ||
         collective == Collective::Scatter;
}

bool recvHoldsRankBlocks(Collective collective) {
  return collective == Collective::AllGather || collective == Collective::AllToAll || collective == Collective::Gather;
}

bool sizeCountsEveryRank(Collective collective) {
  switch (collective) {
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::AllToAll:
    case Collective::Gather:
    case Collective::Scatter: return true;
    default: return false;
  }
}

double busBandwidthFactor(Collective collective, int nranks) {
  const double n = nranks < 1 ? 1 : nranks;
  switch (collective) {
    case Collective::AllReduce: return 2 * (n - 1) / n;
    case Collective::Broadcast:
    case Collective::Reduce: return 1;
    default: return (n - 1) / n;
  }
}

}  // namespace weft
