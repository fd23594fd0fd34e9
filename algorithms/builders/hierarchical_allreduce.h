// Hierarchical all-reduce: (1) a ring reduce-scatter inside each node, after which the rank with
// local rank l holds the node's sum of chunk (l+1) mod L (L ranks per node); (2) a ring
// all-reduce of that chunk along the rail (the ranks with local rank l on every node), so every
// rank of the rail holds the global sum of its chunk; (3) a ring all-gather inside each node.
// Only 2(N-1)/N of S/L crosses the network per rank, on every rank's NIC at once, instead of
// the whole 2(n-1)/n of S through one NIC per node boundary as a flat ring does.
//
// Cost: 2(L-1)*(a_intra + S/(L*B_intra)) + 2(N-1)*(a_inter + S/(L*N*B_inter_per_rank)).
//
// Fallbacks: nodes of different sizes have no common rails, so the builder then returns the
// flat ring all-reduce over the ranks in node order (node 0's ranks, then node 1's, ...), which
// crosses each node boundary once. One node, or one rank per node, is the same ring.
#pragma once

#include <cstddef>
#include <vector>

#include "algorithms/builders/rail_layout.h"
#include "algorithms/schedule.h"

namespace weft {

struct HierarchicalAllReduceParams {
  size_t count = 0;        // elements
  size_t elementSize = 0;  // bytes per element
  int rank = 0;
  std::vector<std::vector<int>> nodes;  // ranks of each node (RankLayout::nodes); every rank once
  bool average = false;                 // divide by the total rank count once, after the rail all-reduce
};

Schedule buildHierarchicalAllReduce(const HierarchicalAllReduceParams& params);

}  // namespace weft
