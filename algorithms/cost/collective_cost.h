// The cost model for every collective: predicted time of each algorithm of a collective from
// the same alpha-beta link terms as the all-reduce formulas (algorithms/cost/cost_model.h), and the
// bus bandwidth nccl-tests would report for it.
//
// CostInput::bytes is the size nccl-tests reports for the collective: the gathered output of an
// all-gather, the input of a reduce-scatter, one rank's send buffer of an all-to-all, the
// root's full buffer of a gather or scatter, the buffer of the others.
#pragma once

#include "algorithms/algorithm.h"
#include "algorithms/cost/cost_model.h"

namespace weft {

// Microseconds; 0 when `algorithm` is not one of `collective`'s (algorithmApplies).
double predictCollectiveUs(Collective collective, Algorithm algorithm, const CostInput& input, const CostModel& model);

// busBandwidthFactor(collective, n) * bytes / time, GB/s.
double collectiveBusBandwidthGBps(Collective collective, size_t bytes, int nranks, double us);

}  // namespace weft
