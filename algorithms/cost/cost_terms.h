// Terms the cost model's formulas share (algorithms/cost/cost_model.cc for all-reduce,
// algorithms/cost/collective_cost.cc for the other collectives): the call's shape and the price of
// the hops schedules make. Positions are node-major, as the layout's ring order is.
#pragma once

#include <vector>

#include "algorithms/builders/power_of_two_fold.h"
#include "algorithms/cost/cost_model.h"

namespace weft::cost {

struct Shape {
  double bytes;
  int n, nodes, local;  // local: ranks per node (smallest node when uneven)
  bool uniform;
};
Shape shapeOf(const CostInput& input);

// Whether the hierarchical schedules have rails here (else they run as the ring).
inline bool hasRails(const Shape& s) { return s.uniform && s.nodes > 1 && s.local > 1; }

// One step of a ring moving `piece` bytes through every rank: as slow as its slowest hop. Where
// it crosses a node boundary, each of the ring's channels (CostModel::ringChannels for the
// call's size) takes a share of the piece through its own NIC.
double ringStepUs(const Shape& s, const CostModel& m, double piece);

// The node of each position (all 0 on one node).
std::vector<int> nodeOfPositions(const CostInput& input, int n);
// Whether the exchange at distance `mask` between virtual ranks of `fold` pairs any two
// positions on different nodes (then the step runs at the network's pace).
bool exchangeCrossesNodes(const std::vector<int>& nodeOf, const PowerOfTwoFold& fold, int mask);
// Whether the fold's pairs (2v, 2v+1) span nodes.
bool foldCrossesNodes(const std::vector<int>& nodeOf, const PowerOfTwoFold& fold);

}  // namespace weft::cost
