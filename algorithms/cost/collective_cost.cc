#include "algorithms/cost/collective_cost.h"

#include <algorithm>

#include "algorithms/algorithm_registry.h"
#include "algorithms/cost/cost_terms.h"
#include "algorithms/cost/prices.h"

namespace weft {

namespace cost {

// All-gather ring / reduce-scatter ring: n-1 steps of one block (on the rings' channels).
double ringGatherUs(const Shape& s, const CostInput&, const CostModel& m) {
  return (s.n - 1) * ringStepUs(s, m, s.bytes / s.n);
}

// Direct collectives but the all-reduce, on mapped peers: one barrier, and each rank reads and
// writes at most the call's bytes (s.bytes: the larger buffer) once.
double directCopyUs(const Shape& s, const CostInput&, const CostModel& m) {
  return (s.n > 1 ? m.intra.latencyUs : 0) + m.memory.timeUs(s.bytes);
}

namespace {

// Recursive doubling all-gather (`halving` false) or recursive halving reduce-scatter: one
// exchange per power of two, moving `mask` virtual ranks' blocks, plus the fold's two extra
// steps; the reduce-scatter also stages its input in Scratch.
double doublingUs(const Shape& s, const CostInput& input, const CostModel& m, bool halving) {
  const std::vector<int> nodeOf = nodeOfPositions(input, s.n);
  const PowerOfTwoFold fold(s.n);
  const double block = s.bytes / s.n;
  const double perVirtual = block * s.n / fold.pw;
  const LinkCost inter = m.interPerRank(s.local);
  double t = 0;
  for (int mask = 1; mask < fold.pw; mask <<= 1)
    t += (exchangeCrossesNodes(nodeOf, fold, mask) ? inter : m.intra).timeUs(mask * perVirtual);
  if (fold.extra > 0) {
    const LinkCost& link = foldCrossesNodes(nodeOf, fold) ? inter : m.intra;
    t += halving ? link.timeUs(s.bytes) + link.timeUs(block) : link.timeUs(block) + link.timeUs(s.bytes - block);
  }
  if (halving) t += m.memory.timeUs(s.bytes);
  return t;
}

}  // namespace

double recursiveDoublingAllGatherUs(const Shape& s, const CostInput& input, const CostModel& m) {
  return doublingUs(s, input, m, false);
}

double recursiveHalvingReduceScatterUs(const Shape& s, const CostInput& input, const CostModel& m) {
  return doublingUs(s, input, m, true);
}

// Bruck all-gather: ceil(log2 n) rounds of min(k, n-k) blocks to the rank k below, through
// Scratch (a copy in and a rotation out).
double bruckAllGatherUs(const Shape& s, const CostInput&, const CostModel& m) {
  const double block = s.bytes / s.n;
  const LinkCost link = s.nodes > 1 ? m.interPerRank(s.local) : m.intra;
  double t = 2 * m.memory.timeUs(s.bytes);
  for (int k = 1; k < s.n; k <<= 1) t += link.timeUs(std::min(k, s.n - k) * block);
  return t;
}

// Hierarchical all-gather / reduce-scatter: N-1 single blocks along the rail, L-1 whole rails
// (N blocks) inside the node, one staging pass through Scratch.
double hierGatherUs(const Shape& s, const CostInput& input, const CostModel& m) {
  if (!hasRails(s)) return ringGatherUs(s, input, m);
  const double block = s.bytes / s.n;
  return (s.nodes - 1) * m.interPerRank(s.local).timeUs(block) + (s.local - 1) * m.intra.timeUs(s.nodes * block) +
         m.memory.timeUs(s.bytes);
}

// Broadcast or reduce along a chain through every rank, pipelined in slices: the first slice
// pays every hop's latency and transfer, the rest stream at the slowest hop's pace.
double chainUs(const Shape& s, const CostInput&, const CostModel& m) {
  const bool crosses = s.nodes > 1;
  const double bandwidth = crosses ? std::min(m.intra.bandwidthGBps, m.nic.bandwidthGBps) : m.intra.bandwidthGBps;
  const double slowestAlpha = crosses ? std::max(m.intra.latencyUs, m.nic.latencyUs) : m.intra.latencyUs;
  const int interHops = crosses ? s.nodes - 1 : 0;
  const int intraHops = s.n - 1 - interHops;
  const double slice = std::min(static_cast<double>(m.sliceBytes), s.bytes);
  const double slices = slice > 0 ? std::max(1.0, s.bytes / slice) : 1.0;
  const double fill =
      intraHops * m.intra.latencyUs + interHops * m.nic.latencyUs + (s.n - 1) * slice / (bandwidth * 1e3);
  return fill + (slices - 1) * (slowestAlpha + slice / (bandwidth * 1e3));
}

// Binomial broadcast or reduce: ceil(log2 n) rounds of the whole buffer; rounds at distances of
// a node or more cross the network, one sender per node.
double binomialUs(const Shape& s, const CostInput&, const CostModel& m) {
  double t = 0;
  for (int distance = 1; distance < s.n; distance <<= 1)
    t += (s.nodes > 1 && distance >= s.local ? m.nic : m.intra).timeUs(s.bytes);
  return t;
}

// Pairwise all-to-all: n-1 exchanges of one block; those with ranks of other nodes share the
// node's NICs with every local rank.
double pairwiseAllToAllUs(const Shape& s, const CostInput&, const CostModel& m) {
  const double block = s.bytes / s.n;
  const int remote = s.nodes > 1 ? s.n - s.local : 0;
  return m.memory.timeUs(block) + (s.n - 1 - remote) * m.intra.timeUs(block) +
         remote * m.interPerRank(s.local).timeUs(block);
}

// Bruck all-to-all: a rotation, ceil(log2 n) rounds each packing, sending and unpacking the
// blocks whose index has bit k set, a rotation back.
double bruckAllToAllUs(const Shape& s, const CostInput&, const CostModel& m) {
  const double block = s.bytes / s.n;
  const LinkCost link = s.nodes > 1 ? m.interPerRank(s.local) : m.intra;
  double t = 2 * m.memory.timeUs(s.bytes);
  for (int bit = 1; bit < s.n; bit <<= 1) {
    int moved = 0;
    for (int i = 0; i < s.n; ++i) moved += (i & bit) ? 1 : 0;
    t += link.timeUs(moved * block) + 2 * m.memory.timeUs(moved * block);
  }
  return t;
}

// Linear gather or scatter: the root exchanges one block with every other rank in turn.
double linearUs(const Shape& s, const CostInput&, const CostModel& m) {
  const double block = s.bytes / s.n;
  const int remote = s.nodes > 1 ? s.n - s.local : 0;
  return m.memory.timeUs(block) + (s.n - 1 - remote) * m.intra.timeUs(block) + remote * m.nic.timeUs(block);
}

}  // namespace cost

double predictCollectiveUs(Collective collective, Algorithm algorithm, const CostInput& input, const CostModel& m) {
  const CollectiveAlgorithm* row = findCollectiveAlgorithm(collective, algorithm);
  if (!row) return 0;
  const cost::Shape s = cost::shapeOf(input);
  if (s.n == 1) return m.memory.timeUs(s.bytes);
  return row->price(s, input, m);
}

double predictAllReduceUs(Algorithm algorithm, const CostInput& input, const CostModel& model) {
  return predictCollectiveUs(Collective::AllReduce, algorithm, input, model);
}

double collectiveBusBandwidthGBps(Collective collective, size_t bytes, int nranks, double us) {
  if (us <= 0) return 0;
  return busBandwidthFactor(collective, nranks) * static_cast<double>(bytes) / (us * 1e3);
}

}  // namespace weft
