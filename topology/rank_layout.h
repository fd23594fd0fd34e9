// The rank layout: from every rank's placement (gathered during bootstrap), which ranks share
// a host ("node"), each rank's local rank and local size, which ranks share a GPU, a ring order
// that keeps each node's ranks adjacent (so the ring crosses each node boundary once), and the
// rails (same local rank on every node) that hierarchical schedules use. A pure function.
#pragma once

#include <string>
#include <vector>

#include "topology/rank_placement.h"

namespace weft {

struct RankLayout {
  int nRanks = 0;
  std::vector<std::string> nodeHosts;             // host id of each node, in order of first rank
  std::vector<std::vector<int>> nodes;            // ranks of each node, ascending
  std::vector<int> nodeOf;                        // per rank: its node
  std::vector<int> localRank;                     // per rank: position within its node
  std::vector<int> localSize;                     // per rank: size of its node
  std::vector<std::vector<int>> ranksSharingGpu;  // per rank: ranks on its host using the same
                                                  // GPU, itself included; empty without a GPU
  std::vector<int> ringOrder;                     // node 0's ranks, then node 1's, ...
  std::vector<std::vector<int>> rails;            // rails[l]: the rank with local rank l on each node
                                                  // (nodes with fewer ranks are absent from it)
  bool uniformLocalSize = true;                   // every node has the same number of ranks

  int nNodes() const { return static_cast<int>(nodes.size()); }
};

RankLayout computeRankLayout(const std::vector<RankPlacement>& ranks);

// A one-line description: "2 nodes x 4 ranks; ring 0 2 4 6 1 3 5 7".
std::string describeRankLayout(const RankLayout& layout);

}  // namespace weft
