// Terms the cost model's formulas share (algorithms/cost_model.cc for all-reduce,
// algorithms/collective_cost.cc for the other collectives): the call's shape and the price of
// the hops schedules make. Positions are node-major, as the layout's ring order is.
#pragma once

#include <vector>

#include "algorithms/cost_model.h"
#include "algorithms/power_of_two_fold.h"

namespace weft::cost {

struct Shape {
  double bytes;
  int n, nodes, local;  // local: ranks per node (smallest node when uneven)
  bool uniform;
};
Shape shapeOf(const CostInput& input);

int log2Ceil(int n);

// One step of a single ring moving `piece` bytes: as slow as its slowest hop (one NIC where it
// crosses a node boundary).
double ringStepUs(const Shape& s, const CostModel& m, double piece);

// The node of each position (all 0 on one node).
std::vector<int> nodeOfPositions(const CostInput& input, int n);
// Whether the exchange at distance `mask` between virtual ranks of `fold` pairs any two
// positions on different nodes (then the step runs at the network's pace).
bool exchangeCrossesNodes(const std::vector<int>& nodeOf, const PowerOfTwoFold& fold, int mask);
// Whether the fold's pairs (2v, 2v+1) span nodes.
bool foldCrossesNodes(const std::vector<int>& nodeOf, const PowerOfTwoFold& fold);

}  // namespace weft::cost
