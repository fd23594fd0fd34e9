// The collectives weft schedules and the algorithm families that build them. One name space of
// algorithms serves every collective (WEFT_ALGO uses these names); each collective has its own
// subset (the registry, algorithms/algorithm_registry.cc, is where it is written down):
//
//   allreduce      ring, tree (double binary), rhd (halving-doubling), hier, direct
//   allgather      ring, rhd (recursive doubling), bruck, hier
//   reducescatter  ring, rhd (recursive halving), hier
//   broadcast      ring (pipelined chain along the ring), binomial
//   reduce         ring (pipelined chain along the ring), binomial
//   alltoall       pairwise, bruck
//   gather         linear
//   scatter        linear
#pragma once

#include <cstddef>

namespace weft {

enum class Collective : int {
  AllReduce = 0,
  AllGather,
  ReduceScatter,
  Broadcast,
  Reduce,
  AllToAll,
  Gather,
  Scatter,
  Count
};
constexpr int kCollectiveCount = static_cast<int>(Collective::Count);
const char* collectiveName(Collective collective);  // "allreduce", "allgather", ...
// Whether the collective combines values with a reduction op (the others move them as they are).
inline bool collectiveReduces(Collective c) {
  return c == Collective::AllReduce || c == Collective::ReduceScatter || c == Collective::Reduce;
}

enum class Algorithm : int { Ring = 0, Tree, Rhd, Hier, Direct, Bruck, Binomial, Pairwise, Linear, Doubling, Count };
constexpr int kAlgorithmCount = static_cast<int>(Algorithm::Count);
const char* algorithmName(Algorithm algorithm);  // "ring", "tree", ...

// Whether `algorithm` has a schedule for `collective` (a row of the registry).
bool algorithmApplies(Collective collective, Algorithm algorithm);
// What runs when nothing else can: ring, pairwise or linear.
Algorithm defaultAlgorithm(Collective collective);
// The algorithms of `collective`, comma separated, for messages ("ring, rhd, bruck, hier").
const char* algorithmsOf(Collective collective);

// Whether the size nccl-tests reports for `collective` is the call's count times the rank count
// (all-gather, reduce-scatter, all-to-all, gather, scatter: count is per rank) rather than the
// count itself.
bool sizeCountsEveryRank(Collective collective);
// Which buffer of such a collective holds a block per rank, its count elements each (a gather's
// receive and a scatter's send only at the root): the buffers a slice of the call is strided in
// (CollectiveShape::blockStride). Both, for the all-to-all.
bool sendHoldsRankBlocks(Collective collective);  // reduce-scatter, all-to-all, scatter
bool recvHoldsRankBlocks(Collective collective);  // all-gather, all-to-all, gather

// nccl-tests' bus bandwidth factor: busbw = factor * size / time, where size is the buffer the
// perf tool reports (all-gather: the gathered output, reduce-scatter: the input, all-to-all:
// one rank's send buffer, the others: the buffer): 2(n-1)/n for all-reduce, (n-1)/n for
// all-gather, reduce-scatter, all-to-all, gather and scatter, 1 for broadcast and reduce.
double busBandwidthFactor(Collective collective, int nranks);

}  // namespace weft
