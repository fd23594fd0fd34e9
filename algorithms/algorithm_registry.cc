#include "algorithms/algorithm_registry.h"

#include <array>
#include <iterator>
#include <string>

#include "algorithms/builders/allgather.h"
#include "algorithms/builders/alltoall.h"
#include "algorithms/builders/broadcast.h"
#include "algorithms/builders/direct_collectives.h"
#include "algorithms/builders/doubling_allreduce.h"
#include "algorithms/builders/gather_scatter.h"
#include "algorithms/builders/hierarchical_allreduce.h"
#include "algorithms/builders/reduce_scatter.h"
#include "algorithms/builders/reduce_to_root.h"
#include "algorithms/builders/rhd_allreduce.h"
#include "algorithms/builders/ring_allreduce.h"
#include "algorithms/builders/tree_allreduce.h"
#include "algorithms/cost/prices.h"

namespace weft {

namespace {

// Tie order: NCCL's ring and tree first; then the hierarchy, whose network traffic runs between
// neighbouring nodes of a rail, before halving-doubling, whose partners sit at distances up to
// half the machine and so load the fabric's upper levels (its bytes and hops are otherwise the
// same at powers of two); the rest after.
constexpr AlgorithmInfo kAlgorithms[] = {
    {.algorithm = Algorithm::Ring, .name = "ring", .ncclName = "Ring"},
    {.algorithm = Algorithm::Tree, .name = "tree", .ncclName = "Tree"},
    {.algorithm = Algorithm::Hier, .name = "hier", .needsRails = true},
    {.algorithm = Algorithm::Rhd, .name = "rhd"},
    {.algorithm = Algorithm::Doubling, .name = "doubling"},
    {.algorithm = Algorithm::Direct, .name = "direct", .needsMappedPeers = true},
    {.algorithm = Algorithm::Bruck, .name = "bruck"},
    {.algorithm = Algorithm::Binomial, .name = "binomial"},
    {.algorithm = Algorithm::Pairwise, .name = "pairwise"},
    {.algorithm = Algorithm::Linear, .name = "linear"},
};

constexpr bool listsEveryAlgorithmOnce() {
  for (int a = 0; a < kAlgorithmCount; ++a) {
    int rows = 0;
    for (const AlgorithmInfo& info : kAlgorithms) rows += static_cast<int>(info.algorithm) == a ? 1 : 0;
    if (rows != 1) return false;
  }
  return std::size(kAlgorithms) == static_cast<size_t>(kAlgorithmCount);
}
static_assert(listsEveryAlgorithmOnce(), "kAlgorithms: one row for every value of enum Algorithm");

// From the call's shape to each builder's parameters.

Schedule ringAllReduce(const CollectiveShape& s, const std::vector<int>& order) {
  return buildRingAllReduce({.count = s.count,
                             .elementSize = s.elementSize,
                             .rank = s.rank,
                             .ringOrder = order,
                             .average = s.average,
                             .preScale = s.preScale,
                             .channels = s.channels,
                             .nodes = s.nodes,
                             .pieceChunkBytes = s.pieceChunkBytes});
}

Schedule treeAllReduce(const CollectiveShape& s, const std::vector<int>& order) {
  return buildTreeAllReduce(
      {.count = s.count, .elementSize = s.elementSize, .rank = s.rank, .order = order, .average = s.average});
}

Schedule rhdAllReduce(const CollectiveShape& s, const std::vector<int>& order) {
  return buildRhdAllReduce(
      {.count = s.count, .elementSize = s.elementSize, .rank = s.rank, .order = order, .average = s.average});
}

Schedule doublingAllReduce(const CollectiveShape& s, const std::vector<int>& order) {
  return buildDoublingAllReduce(
      {.count = s.count, .elementSize = s.elementSize, .rank = s.rank, .order = order, .average = s.average});
}

Schedule hierAllReduce(const CollectiveShape& s, const std::vector<int>& order) {
  // Without a layout every rank is on one node, in ring order.
  return buildHierarchicalAllReduce({.count = s.count,
                                     .elementSize = s.elementSize,
                                     .rank = s.rank,
                                     .nodes = s.nodes.empty() ? std::vector<std::vector<int>>{order} : s.nodes,
                                     .average = s.average});
}

DirectParams directParams(const CollectiveShape& s, const std::vector<int>&) {
  return {.count = s.count,
          .elementSize = s.elementSize,
          .rank = s.rank,
          .nranks = s.nranks,
          .root = s.root,
          .average = s.average};
}

AllGatherParams allGatherParams(const CollectiveShape& s, const std::vector<int>& order) {
  return {.count = s.count,
          .elementSize = s.elementSize,
          .rank = s.rank,
          .nranks = s.nranks,
          .ringOrder = order,
          .inPlace = s.inPlace,
          .nodes = s.nodes,
          .channels = s.channels};
}

ReduceScatterParams reduceScatterParams(const CollectiveShape& s, const std::vector<int>& order) {
  return {.recvCount = s.count,
          .elementSize = s.elementSize,
          .rank = s.rank,
          .nranks = s.nranks,
          .ringOrder = order,
          .average = s.average,
          .preScale = s.preScale,
          .inPlace = s.inPlace,
          .nodes = s.nodes,
          .channels = s.channels};
}

BroadcastParams broadcastParams(const CollectiveShape& s, const std::vector<int>& order) {
  return {.count = s.count,
          .elementSize = s.elementSize,
          .rank = s.rank,
          .nranks = s.nranks,
          .root = s.root,
          .ringOrder = order};
}

ReduceParams reduceParams(const CollectiveShape& s, const std::vector<int>& order) {
  return {.count = s.count,
          .elementSize = s.elementSize,
          .rank = s.rank,
          .nranks = s.nranks,
          .root = s.root,
          .ringOrder = order,
          .average = s.average,
          .preScale = s.preScale};
}

AllToAllParams allToAllParams(const CollectiveShape& s, const std::vector<int>&) {
  return {.count = s.count, .elementSize = s.elementSize, .rank = s.rank, .nranks = s.nranks, .inPlace = s.inPlace};
}

GatherScatterParams gatherScatterParams(const CollectiveShape& s, const std::vector<int>&) {
  return {.count = s.count,
          .elementSize = s.elementSize,
          .rank = s.rank,
          .nranks = s.nranks,
          .root = s.root,
          .inPlace = s.inPlace};
}

// A builder that takes the parameters `params` makes.
template <auto build, auto params>
Schedule from(const CollectiveShape& shape, const std::vector<int>& order) {
  return build(params(shape, order));
}

using C = Collective;
using A = Algorithm;
using namespace cost;

constexpr bool kNoPreScale = true;  // CollectiveAlgorithm::ignoresPreScale

// Grouped by collective; the first row of each is its default.
constexpr CollectiveAlgorithm kCollectiveAlgorithms[] = {
    {C::AllReduce, A::Ring, ringAllReduce, ringAllReduceUs},
    {C::AllReduce, A::Tree, treeAllReduce, treeAllReduceUs, kNoPreScale},
    {C::AllReduce, A::Rhd, rhdAllReduce, rhdAllReduceUs, kNoPreScale},
    {C::AllReduce, A::Hier, hierAllReduce, hierAllReduceUs, kNoPreScale},
    {C::AllReduce, A::Direct, from<buildDirectAllReduce, directParams>, directAllReduceUs, kNoPreScale},
    {C::AllReduce, A::Doubling, doublingAllReduce, doublingAllReduceUs, kNoPreScale},

    {C::AllGather, A::Ring, from<buildRingAllGather, allGatherParams>, ringGatherUs},
    {C::AllGather, A::Rhd, from<buildRecursiveDoublingAllGather, allGatherParams>, recursiveDoublingAllGatherUs},
    {C::AllGather, A::Bruck, from<buildBruckAllGather, allGatherParams>, bruckAllGatherUs},
    {C::AllGather, A::Hier, from<buildHierarchicalAllGather, allGatherParams>, hierGatherUs},
    {C::AllGather, A::Direct, from<buildDirectAllGather, directParams>, directCopyUs},

    {C::ReduceScatter, A::Ring, from<buildRingReduceScatter, reduceScatterParams>, ringGatherUs},
    {C::ReduceScatter, A::Rhd, from<buildRecursiveHalvingReduceScatter, reduceScatterParams>,
     recursiveHalvingReduceScatterUs},
    {C::ReduceScatter, A::Hier, from<buildHierarchicalReduceScatter, reduceScatterParams>, hierGatherUs},
    {C::ReduceScatter, A::Direct, from<buildDirectReduceScatter, directParams>, directCopyUs, kNoPreScale},

    {C::Broadcast, A::Ring, from<buildChainBroadcast, broadcastParams>, chainUs},
    {C::Broadcast, A::Binomial, from<buildBinomialBroadcast, broadcastParams>, binomialUs},
    {C::Broadcast, A::Direct, from<buildDirectBroadcast, directParams>, directCopyUs},

    {C::Reduce, A::Ring, from<buildChainReduce, reduceParams>, chainUs},
    {C::Reduce, A::Binomial, from<buildBinomialReduce, reduceParams>, binomialUs},
    {C::Reduce, A::Direct, from<buildDirectReduce, directParams>, directCopyUs, kNoPreScale},

    {C::AllToAll, A::Pairwise, from<buildPairwiseAllToAll, allToAllParams>, pairwiseAllToAllUs},
    {C::AllToAll, A::Bruck, from<buildBruckAllToAll, allToAllParams>, bruckAllToAllUs},
    {C::AllToAll, A::Direct, from<buildDirectAllToAll, directParams>, directCopyUs},

    {C::Gather, A::Linear, from<buildLinearGather, gatherScatterParams>, linearUs},
    {C::Gather, A::Direct, from<buildDirectGather, directParams>, directCopyUs},

    {C::Scatter, A::Linear, from<buildLinearScatter, gatherScatterParams>, linearUs},
    {C::Scatter, A::Direct, from<buildDirectScatter, directParams>, directCopyUs},
};

constexpr bool rowsAreWellFormed() {
  for (int c = 0; c < kCollectiveCount; ++c) {
    bool seen = false, ended = false;
    for (const CollectiveAlgorithm& row : kCollectiveAlgorithms) {
      const bool mine = static_cast<int>(row.collective) == c;
      if (mine && ended) return false;  // rows of one collective are not together
      if (!mine && seen) ended = true;
      seen |= mine;
    }
    if (!seen) return false;  // a collective without an algorithm
  }
  return true;
}
// (That each row has a builder and a price is a unit test: comparing a function's address with
// null is not a constant expression in sanitizer builds.)
static_assert(rowsAreWellFormed(), "kCollectiveAlgorithms: every collective has rows, together");

}  // namespace

std::span<const AlgorithmInfo> algorithmTable() { return kAlgorithms; }

const AlgorithmInfo& algorithmInfo(Algorithm algorithm) {
  for (const AlgorithmInfo& info : kAlgorithms)
    if (info.algorithm == algorithm) return info;
  static const AlgorithmInfo unknown{.algorithm = Algorithm::Count, .name = "?"};
  return unknown;
}

std::span<const CollectiveAlgorithm> collectiveAlgorithmTable() { return kCollectiveAlgorithms; }

const CollectiveAlgorithm* findCollectiveAlgorithm(Collective collective, Algorithm algorithm) {
  for (const CollectiveAlgorithm& row : kCollectiveAlgorithms)
    if (row.collective == collective && row.algorithm == algorithm) return &row;
  return nullptr;
}

// algorithm.h's questions about algorithms, answered from the tables.

const char* algorithmName(Algorithm algorithm) { return algorithmInfo(algorithm).name; }

bool algorithmApplies(Collective collective, Algorithm algorithm) {
  return findCollectiveAlgorithm(collective, algorithm) != nullptr;
}

Algorithm defaultAlgorithm(Collective collective) {
  for (const CollectiveAlgorithm& row : kCollectiveAlgorithms)
    if (row.collective == collective) return row.algorithm;
  return kCollectiveAlgorithms[0].algorithm;  // not a collective (Collective::Count)
}

const char* algorithmsOf(Collective collective) {
  static const auto lists = [] {
    std::array<std::string, kCollectiveCount> text;
    for (const CollectiveAlgorithm& row : kCollectiveAlgorithms) {
      std::string& list = text[static_cast<int>(row.collective)];
      list += (list.empty() ? "" : ", ") + std::string(algorithmName(row.algorithm));
    }
    return text;
  }();
  const int c = static_cast<int>(collective);
  return c >= 0 && c < kCollectiveCount ? lists[c].c_str() : "";
}

}  // namespace weft
