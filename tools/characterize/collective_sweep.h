// Every collective with every algorithm that applies to it, at each size, measured by the perf
// tools' harness (perf/perf_harness.h: the same warm-up, checks and -I statistics), each
// algorithm forced through WEFT_ALGO on a communicator split for it; and the closing of the
// loop: the same sizes on a communicator that chooses by itself, without and with the tuning
// file, so the report can show the default and the tuned choice side by side.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "perf/perf_harness.h"
#include "tools/characterize/characterize_options.h"
#include "tools/characterize/rank_exchange.h"
#include "tools/characterize/run_control.h"

namespace weft::characterize {

// One (collective, algorithm) pair of the sweep.
struct SweepUnit {
  const perf::CollTest* test = nullptr;
  Collective collective = Collective::Count;
  std::string name;        // nccl-tests' name: "all_reduce"
  std::string algorithm;   // WEFT_ALGO's name
  bool isDefault = false;  // the collective's default algorithm (kept longest under a budget)
};

struct SweepPlan {
  std::vector<SweepUnit> units;
  std::vector<size_t> sizes;
  std::vector<std::string> skipped;  // "all_reduce rhd: budget", "64M and above: budget"
  double estimatedSeconds = 0;       // sweep and verification together
};

// Seconds to make (and destroy) one communicator for a unit, the slowest rank's: what each
// unit adds to the estimates. Collective.
double measureSplitSeconds(RankExchange* exchange);

// Every registered perf tool whose collective has algorithms (or those named in
// options.collectives), shrunk to fit budgetSeconds (<= 0: no budget) by the estimate that
// each call costs what a ring all-reduce does over the slowest pair (latencyUs, bandwidthGBps)
// and each unit a split: first the largest sizes, then every algorithm but the default, then
// the last collectives. An unknown name in options.collectives is an error naming it.
SweepPlan planSweep(const std::vector<const perf::CollTest*>& tests, const CharacterizeOptions& options, int nranks,
                    double latencyUs, double bandwidthGBps, double splitSeconds, double budgetSeconds);

// Runs the plan; returns the document's "sweep" array (rank 0) and counts wrong rows. After
// each (collective, algorithm), rank 0 hands the array so far to `unitDone` (the document is
// saved then: a launcher may kill the ranks soon after Ctrl-C).
std::string runSweep(RankExchange* exchange, RunControl* control, const SweepPlan& plan,
                     const CharacterizeOptions& options, int* wrongRows,
                     const std::function<void(const std::string&)>& unitDone);

// For each collective of the plan (its default units' sizes): default choice against the
// tuned one (rank 0's WEFT_TUNING_FILE = tuningFile), alternated ABBA; the "selection" array.
std::string runSelection(RankExchange* exchange, RunControl* control, const SweepPlan& plan,
                         const CharacterizeOptions& options, const std::string& tuningFile);

}  // namespace weft::characterize
