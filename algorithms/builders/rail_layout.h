// Where a rank sits in a two-level layout of equal nodes (RankLayout::nodes: N nodes of L
// ranks): its node, its local rank l, and its neighbours inside the node and along its rail
// (the ranks with the same local rank on every node), for the hierarchical schedules. The
// hierarchical all-gather and reduce-scatter stage blocks in Scratch rail-major, rail j's N
// blocks contiguous, so that a whole rail moves as one message.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "algorithms/schedule.h"

namespace weft {

// True when every node has the same number of ranks (the case the hierarchy serves).
inline bool nodesAreUniform(const std::vector<std::vector<int>>& nodes) {
  for (const auto& node : nodes)
    if (node.size() != nodes.front().size()) return false;
  return !nodes.empty();
}

// True when there are rails to use: two or more equal nodes of two or more ranks.
inline bool hasRails(const std::vector<std::vector<int>>& nodes) {
  return nodesAreUniform(nodes) && nodes.size() > 1 && nodes.front().size() > 1;
}

// The ranks node by node: the ring a hierarchical schedule runs when there are no rails.
inline std::vector<int> nodeMajorOrder(const std::vector<std::vector<int>>& nodes) {
  std::vector<int> order;
  for (const auto& node : nodes) order.insert(order.end(), node.begin(), node.end());
  return order;
}

struct RailLayout {
  const std::vector<std::vector<int>>& nodes;
  size_t block;  // bytes per rank's block
  int nodeCount = 0, local = 0;
  int myNode = 0, l = 0;

  RailLayout(const std::vector<std::vector<int>>& nodeRanks, int rank, size_t blockBytes)
      : nodes(nodeRanks), block(blockBytes) {
    nodeCount = static_cast<int>(nodes.size());
    local = nodeCount ? static_cast<int>(nodes.front().size()) : 0;
    for (int k = 0; k < nodeCount; ++k) {
      auto it = std::find(nodes[k].begin(), nodes[k].end(), rank);
      if (it != nodes[k].end()) myNode = k, l = static_cast<int>(it - nodes[k].begin());
    }
  }
  static int wrap(int a, int m) { return ((a % m) + m) % m; }

  // Neighbours: next/previous local rank on this node, next/previous node on this rail.
  int next() const { return nodes[myNode][wrap(l + 1, local)]; }
  int prev() const { return nodes[myNode][wrap(l - 1, local)]; }
  int up() const { return nodes[wrap(myNode + 1, nodeCount)][l]; }
  int down() const { return nodes[wrap(myNode - 1, nodeCount)][l]; }

  size_t scratchBytes() const { return static_cast<size_t>(nodeCount) * local * block; }
  // The Scratch block of the rank with local rank `rail` on node `node` (both taken modulo).
  BufferRange slot(int rail, int node) const {
    return {BufferKind::Scratch, (static_cast<size_t>(wrap(rail, local)) * nodeCount + wrap(node, nodeCount)) * block,
            block};
  }
  // Rail j's N blocks.
  BufferRange rail(int j) const {
    return {BufferKind::Scratch, static_cast<size_t>(wrap(j, local)) * nodeCount * block,
            static_cast<size_t>(nodeCount) * block};
  }
};

}  // namespace weft
