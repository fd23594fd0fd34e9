#include "algorithms/builders/hierarchical_allreduce.h"

#include "algorithms/builders/ring_allreduce.h"
#include "algorithms/builders/split_evenly.h"

namespace weft {

Schedule buildHierarchicalAllReduce(const HierarchicalAllReduceParams& p) {
  if (!hasRails(p.nodes)) {
    RingAllReduceParams ring;
    ring.count = p.count;
    ring.elementSize = p.elementSize;
    ring.rank = p.rank;
    ring.average = p.average;
    ring.ringOrder = nodeMajorOrder(p.nodes);
    return buildRingAllReduce(ring);
  }
  const RailLayout at(p.nodes, p.rank, 0);  // positions only: nothing is staged in Scratch
  const int nNodes = at.nodeCount, local = at.local, myNode = at.myNode, l = at.l;
  const size_t es = p.elementSize;
  Schedule schedule;
  schedule.divisor = static_cast<uint64_t>(nNodes) * static_cast<uint64_t>(local);
  auto mod = RailLayout::wrap;
  auto chunk = [&](BufferKind buffer, int c) {
    ElementSpan span = splitEvenly(p.count, local, mod(c, local));
    return BufferRange{buffer, span.begin * es, (span.end - span.begin) * es};
  };
  const int next = at.next(), prev = at.prev();
  // (1) Intra-node reduce-scatter (the ring's first half).
  for (int s = 0; s < local - 1; ++s) {
    schedule.steps.push_back(
        {StepKind::Send, next, chunk(s == 0 ? BufferKind::Send : BufferKind::Recv, l - s), {}, {}});
    schedule.steps.push_back(
        {StepKind::RecvReduce, prev, chunk(BufferKind::Send, l - s - 1), chunk(BufferKind::Recv, l - s - 1), {}});
  }
  // (2) Ring all-reduce of the owned chunk along the rail.
  const ElementSpan owned = splitEvenly(p.count, local, mod(l + 1, local));
  auto piece = [&](int c) {
    ElementSpan span = splitEvenly(owned.end - owned.begin, nNodes, mod(c, nNodes));
    return BufferRange{BufferKind::Recv, (owned.begin + span.begin) * es, (span.end - span.begin) * es};
  };
  const int up = at.up(), down = at.down();
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
