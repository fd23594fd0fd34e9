#include "tools/characterize/collective_sweep.h"

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "algorithms/algorithm_registry.h"
#include "algorithms/cost/algorithm_selection.h"
#include "common/json_text.h"
// The algorithm a call ran is in the communicator's collective record (read on the calling
// thread, after the call: the record's own rule).
#include "runtime/comm/communicator.h"

namespace weft::characterize {
namespace {

// Sizes at which the tool's counts leave no element (nccl-tests' 16-byte per-rank blocks) are
// not measured: there is nothing to time.
bool hasElements(const perf::CollTest& test, size_t bytes, int nranks) {
  return perf::collCounts(test, bytes / sizeof(float), sizeof(float), nranks).paramCount > 0;
}

std::string toolCollectiveName(const perf::CollTest& test) {
  std::string name = test.name;
  const size_t suffix = name.rfind("_perf");
  return suffix == std::string::npos ? name : name.substr(0, suffix);
}

std::string sizeText(size_t bytes) {
  for (auto [unit, scale] : {std::pair{"G", size_t{1} << 30}, {"M", size_t{1} << 20}, {"K", size_t{1} << 10}})
    if (bytes >= scale && bytes % scale == 0) return std::to_string(bytes / scale) + unit;
  return std::to_string(bytes);
}

// A ring all-reduce's steps and bytes over the slowest pair's figures: the dearest collective
// of the sweep at large sizes, and an upper bound for most (the ping-pong bandwidth is below a
// pipelined collective's).
double estimateCallSeconds(size_t bytes, int nranks, double latencyUs, double bandwidthGBps) {
  const double n = nranks;
  return 2.0 * (n - 1) * latencyUs * 1e-6 + 2.0 * (n - 1) / n * static_cast<double>(bytes) / (bandwidthGBps * 1e9);
}

// What the harness adds per size: filling, poisoning and checking the buffers (about 1 GB/s
// here, element by element) and its own small exchanges (timing, per-iteration statistics).
constexpr double kCheckBytesPerSecond = 1e9;
constexpr double kHarnessSecondsPerSize = 200e-6;

// Calls per measured size: warm-up, the sync call, the timed loop, the check.
int callsPerSize(const CharacterizeOptions& o) { return o.warmup + 1 + o.iters + 1; }

double estimateUnitSeconds(const std::vector<size_t>& sizes, const CharacterizeOptions& o, int nranks, double latencyUs,
                           double bandwidthGBps, double splitSeconds) {
  double seconds = splitSeconds;
  for (size_t s : sizes) {
    seconds += callsPerSize(o) * estimateCallSeconds(s, nranks, latencyUs, bandwidthGBps);
    // The harness poisons the whole receive buffer (sized for the largest row) before each check.
    seconds += (3.0 * static_cast<double>(s) + 2.0 * static_cast<double>(sizes.back())) / kCheckBytesPerSecond +
               kHarnessSecondsPerSize;
  }
  return seconds;
}

double estimatePlanSeconds(const SweepPlan& plan, const CharacterizeOptions& o, int nranks, double latencyUs,
                           double bandwidthGBps, double splitSeconds) {
  const double unit = estimateUnitSeconds(plan.sizes, o, nranks, latencyUs, bandwidthGBps, splitSeconds);
  int defaults = 0;
  for (const SweepUnit& u : plan.units) defaults += u.isDefault ? 1 : 0;
  // The verification measures each collective four times on two communicators.
  const double verify = o.verifyTuning ? defaults * (4 * (unit - splitSeconds) + 2 * splitSeconds) : 0.0;
  return static_cast<double>(plan.units.size()) * unit + verify;
}

// An environment variable set for the duration of a scope, and put back after it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A communicator of the same ranks whose init read WEFT_ALGO = `algo` (unset: weft chooses)
// and, on rank 0, WEFT_TUNING_FILE = `tuning` (unset: the default terms). Settings are read at
// init, so a split is how one process gets communicators that choose differently.
class UnitComm {
 public:
  UnitComm(RankExchange* exchange, const std::optional<std::string>& algo, const std::optional<std::string>& tuning) {
    ScopedEnv weftAlgo("WEFT_ALGO", algo);
    ScopedEnv ncclAlgo("NCCL_ALGO", std::nullopt);
    ScopedEnv tuningFile("WEFT_TUNING_FILE", exchange->rank() == 0 ? tuning : std::nullopt);
    checkNccl(ncclCommSplit(exchange->comm(), 0, exchange->rank(), &comm_, nullptr), exchange->comm(), "ncclCommSplit");
  }
  ~UnitComm() {
    if (!comm_) return;
    // Unwinding from a failure: abort, which tells peers on this host at once; a destroy would
    // leave them waiting until WEFT_TIMEOUT.
    if (std::uncaught_exceptions() > 0) {
      ncclCommAbort(comm_);
    } else {
      ncclCommDestroy(comm_);
    }
  }
  UnitComm(const UnitComm&) = delete;
  UnitComm& operator=(const UnitComm&) = delete;
  ncclComm_t get() const { return comm_; }

 private:
  ncclComm_t comm_ = nullptr;
};

// The algorithm of the last call of `collective` with `bytes` on `comm` ("?" when the record
// is off or does not hold it).
std::string algorithmRan(ncclComm_t comm, Collective collective, size_t bytes) {
  const std::vector<const CollectiveRecord*> entries = comm->exec.records.entries();
  for (auto it = entries.rbegin(); it != entries.rend(); ++it)
    if ((*it)->kind == static_cast<int>(collective) && (*it)->bytes == bytes) return (*it)->algorithm;
  return "?";
}

perf::PerfOptions benchOptions(const CharacterizeOptions& o, size_t maxBytes) {
  perf::PerfOptions p;
  p.minBytes = o.minBytes;
  p.maxBytes = maxBytes;
  p.iters = o.iters;
  p.warmupIters = o.warmup;
  p.check = 1;
  p.perIterTiming = 1;
  return p;
}

std::string rowJson(const SweepUnit& unit, const std::string& ran, const perf::PerfJsonResult& row) {
  const perf::PerfJsonPlacement& p = row.outOfPlace;
  std::ostringstream out;
  out << "{\"collective\": " << jsonQuote(unit.name) << ", \"algorithm\": " << jsonQuote(unit.algorithm)
      << ", \"ran\": " << jsonQuote(ran) << ", \"size\": " << row.size << ", \"count\": " << row.count
      << ", \"type\": " << jsonQuote(row.type) << ", \"redop\": " << jsonQuote(row.redop)
      << ", \"time_us\": " << jsonNumber(p.timeUs) << ", \"algbw_GBps\": " << jsonNumber(p.algBw)
      << ", \"busbw_GBps\": " << jsonNumber(p.busBw) << ", \"wrong\": " << p.wrong
      << ", \"iter_us\": {\"min\": " << jsonNumber(p.statsUs.min) << ", \"max\": " << jsonNumber(p.statsUs.max)
      << ", \"avg\": " << jsonNumber(p.statsUs.avg) << ", \"p50\": " << jsonNumber(p.statsUs.p50)
      << ", \"p95\": " << jsonNumber(p.statsUs.p95) << ", \"p99\": " << jsonNumber(p.statsUs.p99)
      << ", \"stdev\": " << jsonNumber(p.statsUs.stdev) << ", \"cv_pct\": " << jsonNumber(p.statsUs.cvPct)
      << "}, \"rank_avg_us\": [";
  for (size_t r = 0; r < p.perProcessUs.size(); ++r) {
    const std::vector<double>& times = p.perProcessUs[r];
    double sum = 0;
    for (double t : times) sum += t;
    out << (r ? ", " : "") << jsonNumber(times.empty() ? 0.0 : sum / static_cast<double>(times.size()));
  }
  out << "]}";
  return out.str();
}

}  // namespace

double measureSplitSeconds(RankExchange* exchange) {
  const double start = monotonicSeconds();
  { UnitComm comm(exchange, std::nullopt, std::nullopt); }
  return exchange->maxOverRanks(monotonicSeconds() - start);
}

SweepPlan planSweep(const std::vector<const perf::CollTest*>& tests, const CharacterizeOptions& options, int nranks,
                    double latencyUs, double bandwidthGBps, double splitSeconds, double budgetSeconds) {
  SweepPlan plan;
  for (const std::string& wanted : options.collectives) {
    bool known = false;
    for (const perf::CollTest* test : tests) known = known || toolCollectiveName(*test) == wanted;
    if (!known) throw std::runtime_error("--collectives: unknown collective '" + wanted + "'");
  }
  for (const perf::CollTest* test : tests) {
    const std::string name = toolCollectiveName(*test);
    Collective collective;
    if (!parseCollective(name, &collective)) continue;  // sendrecv, hypercube: point-to-point patterns
    if (!options.collectives.empty() &&
        std::find(options.collectives.begin(), options.collectives.end(), name) == options.collectives.end())
      continue;
    if (test->skipReason && test->skipReason(nranks)) continue;
    for (const CollectiveAlgorithm& row : collectiveAlgorithmTable()) {
      if (row.collective != collective) continue;
      plan.units.push_back({.test = test,
                            .collective = collective,
                            .name = name,
                            .algorithm = algorithmName(row.algorithm),
                            .isDefault = row.algorithm == defaultAlgorithm(collective)});
    }
  }
  const std::vector<size_t> allSizes = sweepSizes(options.minBytes, options.maxBytes, options.factor);
  plan.sizes = allSizes;
  auto estimate = [&] { return estimatePlanSeconds(plan, options, nranks, latencyUs, bandwidthGBps, splitSeconds); };
  if (budgetSeconds > 0) {
    while (estimate() > budgetSeconds && plan.sizes.size() > 1) plan.sizes.pop_back();
    if (estimate() > budgetSeconds) {
      for (const SweepUnit& u : plan.units)
        if (!u.isDefault) plan.skipped.push_back(u.name + " " + u.algorithm + ": budget");
      std::erase_if(plan.units, [](const SweepUnit& u) { return !u.isDefault; });
      // Fewer units: the sizes dropped for all of them may fit again.
      while (plan.sizes.size() < allSizes.size()) {
        plan.sizes.push_back(allSizes[plan.sizes.size()]);
        if (estimate() > budgetSeconds) {
          plan.sizes.pop_back();
          break;
        }
      }
    }
    while (estimate() > budgetSeconds && plan.units.size() > 1) {
      plan.skipped.push_back(plan.units.back().name + " " + plan.units.back().algorithm + ": budget");
      plan.units.pop_back();
    }
    for (size_t k = plan.sizes.size(); k < allSizes.size(); ++k)
      plan.skipped.push_back(sizeText(allSizes[k]) + ": budget");
  }
  plan.estimatedSeconds = estimate();
  return plan;
}

std::string runSweep(RankExchange* exchange, RunControl* control, const SweepPlan& plan,
                     const CharacterizeOptions& options, int* wrongRows,
                     const std::function<void(const std::string&)>& unitDone) {
  *wrongRows = 0;
  std::string rows = "[";
  bool first = true;
  const perf::PerfOptions bench = benchOptions(options, plan.sizes.empty() ? options.minBytes : plan.sizes.back());
  control->beginPhase("sweep", static_cast<int>(plan.units.size() * plan.sizes.size()), plan.estimatedSeconds);
  const double perCall = plan.estimatedSeconds / std::max<size_t>(1, plan.units.size() * plan.sizes.size());
  for (const SweepUnit& unit : plan.units) {
    if (control->shouldStop()) break;
    UnitComm comm(exchange, std::string(collectiveName(unit.collective)) + ":" + unit.algorithm, std::nullopt);
    perf::CollectiveBench collectiveBench(*unit.test, bench, comm.get());
    for (size_t size : plan.sizes) {
      if (control->shouldStop()) break;
      control->beginUnit(unit.name + " " + unit.algorithm + " " + sizeText(size), perCall);
      if (!hasElements(*unit.test, size, exchange->nranks())) continue;
      const perf::PerfJsonResult row = collectiveBench.measure(ncclFloat, ncclSum, size);
      if (row.outOfPlace.wrong > 0) ++*wrongRows;
      if (exchange->rank() == 0) {
        rows += (first ? "\n  " : ",\n  ") + rowJson(unit, algorithmRan(comm.get(), unit.collective, row.size), row);
        first = false;
      }
    }
    if (exchange->rank() == 0) unitDone(rows + "\n]");
  }
  if (!control->shouldStop()) control->endPhase();
  return rows + "\n]";
}

std::string runSelection(RankExchange* exchange, RunControl* control, const SweepPlan& plan,
                         const CharacterizeOptions& options, const std::string& tuningFile) {
  std::vector<const SweepUnit*> collectives;
  for (const SweepUnit& unit : plan.units)
    if (unit.isDefault) collectives.push_back(&unit);
  std::string rows = "[";
  bool first = true;
  const perf::PerfOptions bench = benchOptions(options, plan.sizes.empty() ? options.minBytes : plan.sizes.back());
  const int units = static_cast<int>(collectives.size() * plan.sizes.size());
  control->beginPhase("default against tuned", units, plan.estimatedSeconds / 3);
  for (const SweepUnit* unit : collectives) {
    if (control->shouldStop()) break;
    UnitComm defaultComm(exchange, std::nullopt, std::nullopt);
    UnitComm tunedComm(exchange, std::nullopt, tuningFile);
    perf::CollectiveBench defaultBench(*unit->test, bench, defaultComm.get());
    perf::CollectiveBench tunedBench(*unit->test, bench, tunedComm.get());
    for (size_t size : plan.sizes) {
      if (control->shouldStop()) break;
      control->beginUnit(unit->name + " " + sizeText(size), plan.estimatedSeconds / 3 / std::max(1, units));
      if (!hasElements(*unit->test, size, exchange->nranks())) continue;
      // ABBA: a drift of the machine's speed during the four runs falls on both alike.
      double defaultUs = 1e300, tunedUs = 1e300;
      perf::PerfJsonResult row;
      for (int round = 0; round < 4; ++round) {
        const bool tuned = round == 1 || round == 2;
        row = (tuned ? tunedBench : defaultBench).measure(ncclFloat, ncclSum, size);
        if (row.outOfPlace.wrong > 0)
          throw std::runtime_error(unit->name + " " + sizeText(size) + ": wrong results while verifying the tuning");
        double& best = tuned ? tunedUs : defaultUs;
        best = std::min(best, row.outOfPlace.timeUs);
      }
      if (exchange->rank() == 0) {
        std::ostringstream out;
        out << "{\"collective\": " << jsonQuote(unit->name) << ", \"size\": " << row.size
            << ", \"default_algorithm\": " << jsonQuote(algorithmRan(defaultComm.get(), unit->collective, row.size))
            << ", \"default_us\": " << jsonNumber(defaultUs)
            << ", \"tuned_algorithm\": " << jsonQuote(algorithmRan(tunedComm.get(), unit->collective, row.size))
            << ", \"tuned_us\": " << jsonNumber(tunedUs) << "}";
        rows += (first ? "\n  " : ",\n  ") + out.str();
        first = false;
      }
    }
  }
  if (!control->shouldStop()) control->endPhase();
  return rows + "\n]";
}

}  // namespace weft::characterize
