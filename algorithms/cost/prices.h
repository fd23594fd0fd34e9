// The price of each algorithm: predicted microseconds of one call of more than one rank, from
// the alpha-beta link terms of algorithms/cost/cost_terms.h. The registry
// (algorithms/algorithm_registry.cc) names one of these for every (collective, algorithm) row;
// predictCollectiveUs calls it. All-reduce prices live in cost_model.cc, the others in
// collective_cost.cc.
#pragma once

#include "algorithms/cost/cost_model.h"
#include "algorithms/cost/cost_terms.h"

namespace weft::cost {

// All-reduce.
double ringAllReduceUs(const Shape& s, const CostInput& input, const CostModel& m);
double treeAllReduceUs(const Shape& s, const CostInput& input, const CostModel& m);
double rhdAllReduceUs(const Shape& s, const CostInput& input, const CostModel& m);
double hierAllReduceUs(const Shape& s, const CostInput& input, const CostModel& m);
double directAllReduceUs(const Shape& s, const CostInput& input, const CostModel& m);
double doublingAllReduceUs(const Shape& s, const CostInput& input, const CostModel& m);

// All-gather and reduce-scatter.
double ringGatherUs(const Shape& s, const CostInput& input, const CostModel& m);
double recursiveDoublingAllGatherUs(const Shape& s, const CostInput& input, const CostModel& m);
double recursiveHalvingReduceScatterUs(const Shape& s, const CostInput& input, const CostModel& m);
double bruckAllGatherUs(const Shape& s, const CostInput& input, const CostModel& m);
double hierGatherUs(const Shape& s, const CostInput& input, const CostModel& m);

// The other direct schedules (algorithms/builders/direct_collectives.h).
double directCopyUs(const Shape& s, const CostInput& input, const CostModel& m);

// Broadcast and reduce.
double chainUs(const Shape& s, const CostInput& input, const CostModel& m);
double binomialUs(const Shape& s, const CostInput& input, const CostModel& m);

// All-to-all.
double pairwiseAllToAllUs(const Shape& s, const CostInput& input, const CostModel& m);
double bruckAllToAllUs(const Shape& s, const CostInput& input, const CostModel& m);

// Gather and scatter.
double linearUs(const Shape& s, const CostInput& input, const CostModel& m);

}  // namespace weft::cost
