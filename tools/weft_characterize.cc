// weft-characterize: one command from measurement to a report, named outliers and a tuning
// file weft then uses (issue 16; docs/characterization.md). One process per rank under any
// launcher (weftCommInitFromEnv reads weftrun's, mpirun's, srun's and torchrun's variables):
//   1. hosts: every rank's place and every host's hardware (topology model);
//   2. point-to-point latency and bandwidth between every ordered pair of ranks;
//   3. every collective x every algorithm x sizes, checked, with per-iteration spread;
//   4. rank 0 fits the cost model's terms per link class and writes DIR/weft.tuning;
//   5. the default choice against the tuned one (rank 0's WEFT_TUNING_FILE), measured;
//   6. rank 0 writes the report (Markdown, HTML, PNGs) and names the outliers.
// DIR/characterize.json is rewritten after each phase; Ctrl-C or --budget stops between two
// measurements on every rank at once and still leaves the JSON and a report of what was done.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "common/json_text.h"
#include "nccl.h"
#include "perf/perf_harness.h"
#include "tools/characterize/characterize_document.h"
#include "tools/characterize/characterize_options.h"
#include "tools/characterize/collective_sweep.h"
#include "tools/characterize/host_survey.h"
#include "tools/characterize/p2p_matrix.h"
#include "tools/characterize/rank_exchange.h"
#include "tools/characterize/report_script.h"
#include "tools/characterize/run_control.h"
#include "weft/weft.h"

namespace weft::perf {

// The perf tools' descriptions, compiled into this program with WEFT_PERF_TOOL_REGISTER.
std::vector<const CollTest*>& registeredPerfTools() {
  static std::vector<const CollTest*> tools;
  return tools;
}
void registerPerfTool(const CollTest* test) { registeredPerfTools().push_back(test); }

}  // namespace weft::perf

namespace weft::characterize {
namespace {

std::string optionsJson(const CharacterizeOptions& o) {
  std::ostringstream out;
  out << "{\"min_bytes\": " << o.minBytes << ", \"max_bytes\": " << o.maxBytes << ", \"factor\": " << o.factor
      << ", \"iters\": " << o.iters << ", \"warmup\": " << o.warmup << ", \"budget_s\": " << jsonNumber(o.budgetSeconds)
      << ", \"p2p_max_bytes\": " << o.p2pMaxBytes << ", \"type\": \"float\", \"redop\": \"sum\"}";
  return out.str();
}

class Characterization {
 public:
  Characterization(const CharacterizeOptions& options, ncclComm_t world, std::vector<std::string> args)
      : o_(options), exchange_(world), control_(&exchange_, options.budgetSeconds) {
    doc_.startTime = isoTimeNow();
    doc_.args = std::move(args);
    doc_.optionsJson = optionsJson(options);
    doc_.nranks = exchange_.nranks();
    jsonPath_ = o_.outDir + "/characterize.json";
  }

  // Returns the exit status: 0, 1 (a failure, wrong results, or the document not written), or
  // 128 + the signal after Ctrl-C (as launchers report an interrupted job).
  int run() {
    prepareOutput();
    int status = 0;
    try {
      measure();
    } catch (const std::exception& e) {
      // A failed measurement (a rank died, wrong results while verifying): what was measured is
      // still written, with the error. Every rank says it: the one that failed first knows why.
      doc_.stoppedBy = e.what();
      status = 1;
      std::fprintf(stderr, "weft-characterize: rank %d: %s\n", exchange_.rank(), e.what());
    }
    doc_.complete = status == 0 && control_.stoppedBy().empty() && !RunControl::interruptSignal();
    if (doc_.stoppedBy.empty()) doc_.stoppedBy = control_.stoppedBy();
    if (doc_.stoppedBy.empty() && RunControl::interruptSignal()) doc_.stoppedBy = "interrupt";
    save();
    if (status == 0 && (wrongRows_ > 0 || saveFailed_)) status = 1;
    if (RunControl::interruptSignal()) status = 128 + RunControl::interruptSignal();
    return status;
  }

  // Rank 0, after the communicator is gone: the report of whatever the document holds.
  int writeReport() {
    if (exchange_.rank() != 0 || !o_.report) return 0;
    std::vector<std::string> args{jsonPath_, "--out", o_.outDir, "--weft-info", weftInfoPath()};
    if (!o_.baseline.empty()) args.insert(args.end(), {"--baseline", o_.baseline});
    if (!o_.rules.empty()) args.insert(args.end(), {"--rules", o_.rules});
    std::string error;
    // After a signal or a failure a launcher kills the ranks moments later (weftrun: 2 s after
    // forwarding Ctrl-C or after a rank died): the report then runs in a session of its own.
    if (RunControl::interruptSignal() || !doc_.complete) {
      const std::string log = o_.outDir + "/report.log";
      const int started = startReportScriptDetached(args, log, &error);
      if (started == 0)
        std::fprintf(stderr, "weft-characterize: writing the report of what was measured in the background (%s)\n",
                     log.c_str());
      else
        std::fprintf(stderr, "weft-characterize: report not started: %s\n", error.c_str());
      return started == 0 ? 0 : 1;
    }
    const int status = runReportScript(args, &error);
    if (status != 0) {
      std::fprintf(stderr, "weft-characterize: report failed (%d)%s%s\n", status, error.empty() ? "" : ": ",
                   error.c_str());
    } else {
      std::fprintf(stderr, "weft-characterize: report in %s/report.md and report.html\n", o_.outDir.c_str());
    }
    return status == 0 ? 0 : 1;
  }

 private:
  // Rank 0 makes the directory and writes a first document there, and checks the files the
  // report will read, before anything is measured: a typo must not cost a whole run.
  void prepareOutput() {
    std::string error;
    if (exchange_.rank() == 0) {
      struct stat info {};
      if (mkdir(o_.outDir.c_str(), 0755) != 0 && errno != EEXIST) {
        error = "--out: cannot create " + o_.outDir + ": " + std::strerror(errno);
      } else if (stat(o_.outDir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
        error = "--out: " + o_.outDir + " is not a directory";
      } else if (!writeCharacterizeDocument(doc_, jsonPath_, &error)) {
        error = "--out: " + error;
      }
      for (const std::string* file : {&o_.baseline, &o_.rules}) {
        if (error.empty() && !file->empty() && access(file->c_str(), R_OK) != 0)
          error = (file == &o_.baseline ? "--baseline: cannot read " : "--rules: cannot read ") + *file + ": " +
                  std::strerror(errno);
      }
      if (error.empty() && o_.report && reportScriptPath().empty())
        error = "characterize_report.py not found (set WEFT_CHARACTERIZE_SCRIPT, or use --no-report)";
    }
    if (exchange_.anyRank(!error.empty()))
      throw std::runtime_error(exchange_.rank() == 0 ? error : "rank 0 cannot start the run (it says why)");
  }

  void save() {
    if (exchange_.rank() != 0) return;
    doc_.elapsedSeconds = control_.elapsedSeconds();
    std::string error;
    if (!writeCharacterizeDocument(doc_, jsonPath_, &error)) {
      std::fprintf(stderr, "weft-characterize: %s\n", error.c_str());
      saveFailed_ = true;
    }
  }

  void measure() {
    const HostSurvey survey = surveyHosts(&exchange_);
    doc_.ranksJson = survey.ranksJson;
    doc_.hostsJson = survey.hostsJson;
    save();

    const P2pMatrix p2p = measureP2pMatrix(&exchange_, &control_, o_.p2pMaxBytes);
    if (exchange_.rank() == 0) doc_.p2pJson = p2pJson(p2p, survey.sites);
    save();
    if (control_.shouldStop()) return;

    double latencyUs = 0, bandwidthGBps = 0;
    slowestPair(p2p, &latencyUs, &bandwidthGBps);
    const double splitSeconds = measureSplitSeconds(&exchange_);
    // Rank 0's clock decides for everyone: plans built from different clocks would differ.
    const double budgetLeft =
        control_.hasBudget() ? exchange_.maxOverRanks(exchange_.rank() == 0 ? control_.budgetLeftSeconds() : -1e300)
                             : 0;
    const SweepPlan plan = planSweep(perf::registeredPerfTools(), o_, exchange_.nranks(), latencyUs, bandwidthGBps,
                                     splitSeconds, control_.hasBudget() ? std::max(budgetLeft, 1e-9) : 0.0);
    doc_.skipped = plan.skipped;
    doc_.sweepJson = runSweep(&exchange_, &control_, plan, o_, &wrongRows_, [this](const std::string& rowsSoFar) {
      doc_.sweepJson = rowsSoFar;
      save();
    });
    save();
    if (control_.shouldStop()) return;

    const std::string tuning = writeTuningFile();
    if (tuning.empty()) return;
    doc_.tuningFile = tuning;
    save();
    // A signal during the fit (which the fit's process got too) is seen here.
    if (control_.shouldStop() || !o_.verifyTuning) return;
    doc_.selectionJson = runSelection(&exchange_, &control_, plan, o_, tuning);
    save();
    control_.shouldStop();
  }

  // Rank 0 fits and writes DIR/weft.tuning; "" on every rank when it could not.
  std::string writeTuningFile() {
    const std::string path = o_.outDir + "/weft.tuning";
    int status = 0;
    std::string error;
    if (exchange_.rank() == 0)
      status = runReportScript({jsonPath_, "--out", o_.outDir, "--weft-info", weftInfoPath(), "--tuning-only"}, &error);
    if (exchange_.anyRank(status != 0)) {
      if (exchange_.rank() == 0)
        std::fprintf(stderr,
                     "weft-characterize: no tuning file (the fit failed: %d %s); tuned selection not measured\n",
                     status, error.c_str());
      doc_.skipped.push_back("default against tuned: no tuning file");
      return "";
    }
    return path;
  }

  CharacterizeOptions o_;
  RankExchange exchange_;
  RunControl control_;
  CharacterizeDocument doc_;
  std::string jsonPath_;
  int wrongRows_ = 0;
  bool saveFailed_ = false;
};

int characterizeMain(int argc, char** argv) {
  const CharacterizeParse parsed = parseCharacterizeArgs(argc, argv);
  if (parsed.kind == CharacterizeParse::kHelp) {
    std::fputs(characterizeUsage().c_str(), stdout);
    return 0;
  }
  if (parsed.kind == CharacterizeParse::kError) {
    std::fprintf(stderr, "weft-characterize: %s\n%s", parsed.error.c_str(), characterizeUsage().c_str());
    return 2;
  }
  try {  // a misspelt collective fails now, not after the point-to-point phase
    (void)planSweep(perf::registeredPerfTools(), parsed.options, 2, 1, 1, 0, 0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "weft-characterize: %s\n", e.what());
    return 2;
  }
  ncclComm_t world = nullptr;
  if (ncclResult_t r = weftCommInitFromEnv(&world); r != ncclSuccess) {
    const char* last = ncclGetLastError(nullptr);
    std::fprintf(stderr, "weft-characterize: weftCommInitFromEnv failed: %s%s%s\n", ncclGetErrorString(r),
                 last && *last ? ": " : "", last ? last : "");
    return 1;
  }
  // After init: Ctrl-C while waiting for a missing rank ends the process as usual.
  RunControl::installInterruptHandler();
  Characterization run(parsed.options, world, std::vector<std::string>(argv, argv + argc));
  int status = 0;
  try {
    status = run.run();
  } catch (const std::exception& e) {  // the output directory: nothing was measured
    std::fprintf(stderr, "weft-characterize: %s\n", e.what());
    ncclCommAbort(world);
    return 1;
  }
  // The other ranks leave now; rank 0's report needs no communicator.
  if (status == 0 || status > 128) {
    ncclCommDestroy(world);
  } else {
    ncclCommAbort(world);
  }
  const int report = run.writeReport();
  return status != 0 ? status : report;
}

}  // namespace
}  // namespace weft::characterize

int main(int argc, char** argv) { return weft::characterize::characterizeMain(argc, argv); }
