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

const char* algorithmName(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::Ring: return "ring";
    case Algorithm::Tree: return "tree";
    case Algorithm::Rhd: return "rhd";
    case Algorithm::Hier: return "hier";
    case Algorithm::Direct: return "direct";
    case Algorithm::Bruck: return "bruck";
    case Algorithm::Binomial: return "binomial";
    case Algorithm::Pairwise: return "pairwise";
    case Algorithm::Linear: return "linear";
    case Algorithm::Count: break;
  }
  return "?";
}

bool algorithmApplies(Collective collective, Algorithm a) {
  switch (collective) {
    case Collective::AllReduce:
      return a == Algorithm::Ring || a == Algorithm::Tree || a == Algorithm::Rhd || a == Algorithm::Hier ||
             a == Algorithm::Direct;
    case Collective::AllGather:
      return a == Algorithm::Ring || a == Algorithm::Rhd || a == Algorithm::Bruck || a == Algorithm::Hier;
    case Collective::ReduceScatter: return a == Algorithm::Ring || a == Algorithm::Rhd || a == Algorithm::Hier;
    case Collective::Broadcast:
    case Collective::Reduce: return a == Algorithm::Ring || a == Algorithm::Binomial;
    case Collective::AllToAll: return a == Algorithm::Pairwise || a == Algorithm::Bruck;
    case Collective::Gather:
    case Collective::Scatter: return a == Algorithm::Linear;
    case Collective::Count: break;
  }
  return false;
}

Algorithm defaultAlgorithm(Collective collective) {
  switch (collective) {
    case Collective::AllToAll: return Algorithm::Pairwise;
    case Collective::Gather:
    case Collective::Scatter: return Algorithm::Linear;
    default: return Algorithm::Ring;
  }
}

const char* algorithmsOf(Collective collective) {
  switch (collective) {
    case Collective::AllReduce: return "ring, tree, rhd, hier, direct";
    case Collective::AllGather: return "ring, rhd, bruck, hier";
    case Collective::ReduceScatter: return "ring, rhd, hier";
    case Collective::Broadcast:
    case Collective::Reduce: return "ring, binomial";
    case Collective::AllToAll: return "pairwise, bruck";
    case Collective::Gather:
    case Collective::Scatter: return "linear";
    case Collective::Count: break;
  }
  return "";
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
