#include "algorithms/hierarchical_allreduce.h"

#include <algorithm>

#include "algorithms/ring_allreduce.h"

namespace weft {

bool nodesAreUniform(const std::vector<std::vector<int>>& nodes) {
  for (const auto& node : nodes)
    if (node.size() != nodes.front().size()) return false;
  return !nodes.empty();
}

Schedule buildHierarchicalAllReduce(const HierarchicalAllReduceParams& p) {
  const int nNodes = static_cast<int>(p.nodes.size());
  const int local = nNodes ? static_cast<int>(p.nodes.front().size()) : 0;
  if (!nodesAreUniform(p.nodes) || nNodes == 1 || local == 1) {
    RingAllReduceParams ring;
    ring.count = p.count;
    ring.elementSize = p.elementSize;
    ring.rank = p.rank;
    ring.average = p.average;
    for (const auto& node : p.nodes) ring.ringOrder.insert(ring.ringOrder.end(), node.begin(), node.end());
    return buildRingAllReduce(ring);
  }
  int myNode = 0, l = 0;
  for (int k = 0; k < nNodes; ++k) {
    auto it = std::find(p.nodes[k].begin(), p.nodes[k].end(), p.rank);
    if (it != p.nodes[k].end()) {
      myNode = k;
      l = static_cast<int>(it - p.nodes[k].begin());
    }
  }
  const size_t es = p.elementSize;
  Schedule schedule;
  schedule.divisor = static_cast<uint64_t>(nNodes) * static_cast<uint64_t>(local);
  auto mod = [](int a, int m) { return ((a % m) + m) % m; };
  auto chunk = [&](BufferKind buffer, int c) {
    ElementSpan span = splitEvenly(p.count, local, mod(c, local));
    return BufferRange{buffer, span.begin * es, (span.end - span.begin) * es};
  };
  const int next = p.nodes[myNode][mod(l + 1, local)];
  const int prev = p.nodes[myNode][mod(l - 1, local)];
  // (1) Intra-node reduce-scatter (the ring's first half).
  for (int s = 0; s < local - 1; ++s) {
    schedule.steps.push_back({StepKind::Send, next, chunk(s == 0 ? BufferKind::Send : BufferKind::Recv, l - s), {}, {}});
    schedule.steps.push_back({StepKind::RecvReduce, prev, chunk(BufferKind::Send, l - s - 1), chunk(BufferKind::Recv, l - s - 1), {}});
  }
  // (2) Ring all-reduce of the owned chunk along the rail.
  const ElementSpan owned = splitEvenly(p.count, local, mod(l + 1, local));
  auto piece = [&](int c) {
    ElementSpan span = splitEvenly(owned.end - owned.begin, nNodes, mod(c, nNodes));
    return BufferRange{BufferKind::Recv, (owned.begin + span.begin) * es, (span.end - span.begin) * es};
  };
  const int up = p.nodes[mod(myNode + 1, nNodes)][l];
  const int down = p.nodes[mod(myNode - 1, nNodes)][l];
  for (int s = 0; s < nNodes - 1; ++s) {
    schedule.steps.push_back({StepKind::Send, up, piece(myNode - s), {}, {}});
    schedule.steps.push_back({StepKind::RecvReduce, down, piece(myNode - s - 1), piece(myNode - s - 1), {}});
  }
  if (p.average) schedule.steps.push_back({StepKind::Divide, -1, piece(myNode + 1), piece(myNode + 1), {}});
  for (int s = 0; s < nNodes - 1; ++s) {
    schedule.steps.push_back({StepKind::Send, up, piece(myNode + 1 - s), {}, {}});
    schedule.steps.push_back({StepKind::Recv, down, {}, piece(myNode - s), {}});
  }
  // (3) Intra-node all-gather (the ring's second half).
  for (int s = 0; s < local - 1; ++s) {
    schedule.steps.push_back({StepKind::Send, next, chunk(BufferKind::Recv, l + 1 - s), {}, {}});
    schedule.steps.push_back({StepKind::Recv, prev, {}, chunk(BufferKind::Recv, l - s), {}});
  }
  return schedule;
}

}  // namespace weft
