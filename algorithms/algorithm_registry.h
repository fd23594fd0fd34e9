// The registry of algorithms: one row per algorithm (its names and what selection must know
// about it) and one row per (collective, algorithm) pair (how it is built and priced). Every
// other place reads these tables: algorithmName, algorithmApplies, defaultAlgorithm and
// algorithmsOf (algorithm.h), WEFT_ALGO / NCCL_ALGO parsing and the tie order
// (algorithms/cost/algorithm_selection.cc), buildCollectiveSchedule (collective_schedule.cc)
// and predictCollectiveUs (algorithms/cost/collective_cost.cc).
//
// Adding an algorithm: a value in enum Algorithm, a row in kAlgorithms (algorithm_registry.cc),
// a builder (algorithms/builders/) and a price (algorithms/cost/prices.h), joined by one row per
// collective it serves in kCollectiveAlgorithms.
#pragma once

#include <span>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/collective_schedule.h"
#include "algorithms/cost/cost_model.h"
#include "algorithms/cost/cost_terms.h"
#include "algorithms/schedule.h"

namespace weft {

struct AlgorithmInfo {
  Algorithm algorithm = Algorithm::Count;
  const char* name = "";           // WEFT_ALGO's name, and what logs and weft-info print
  const char* ncclName = nullptr;  // NCCL_ALGO's name for the same algorithm, when NCCL has it
  bool needsMappedPeers = false;   // runs only on one host with every peer's buffers mapped
  bool needsRails = false;         // runs as the ring unless there are two levels of equal nodes
};

// This rank's schedule for `shape`; `order` is shape.order, or 0..n-1 when that is empty.
using ScheduleBuilder = Schedule (*)(const CollectiveShape& shape, const std::vector<int>& order);
// Predicted microseconds for a call of more than one rank (one rank: a local copy, priced by
// predictCollectiveUs).
using PriceFunction = double (*)(const cost::Shape& shape, const CostInput& input, const CostModel& model);

struct CollectiveAlgorithm {
  Collective collective = Collective::Count;
  Algorithm algorithm = Algorithm::Count;
  ScheduleBuilder build = nullptr;
  PriceFunction price = nullptr;
  bool ignoresPreScale = false;  // the builder cannot scale inputs: PreMulSum runs the default
};

// Every algorithm once, in tie order: when predictions tie, selection takes the earlier row.
std::span<const AlgorithmInfo> algorithmTable();
const AlgorithmInfo& algorithmInfo(Algorithm algorithm);

// The (collective, algorithm) rows, grouped by collective; a collective's first row is its
// default, and its rows are listed in this order (algorithmsOf).
std::span<const CollectiveAlgorithm> collectiveAlgorithmTable();
// The row of `algorithm` for `collective`; null when the collective does not have it.
const CollectiveAlgorithm* findCollectiveAlgorithm(Collective collective, Algorithm algorithm);

}  // namespace weft
