// When weft-characterize stops, and what it tells the terminal while it runs: an agreed stop
// (Ctrl-C on any rank, or the --budget spent as rank 0 counts it) checked between
// measurements, so every rank leaves the same loop at the same point and the JSON of what was
// measured is still written; and rank 0's progress line with the time left.
#pragma once

#include <string>

#include "tools/characterize/rank_exchange.h"

namespace weft::characterize {

class RunControl {
 public:
  RunControl(RankExchange* exchange, double budgetSeconds);

  // SIGINT, SIGTERM and SIGHUP (what launchers forward) set a flag; a second one ends the
  // process as usual.
  static void installInterruptHandler();
  // The first such signal, 0 when none came: seen at once, before the agreed stop.
  static int interruptSignal();

  // Agreed on every rank; once true it stays true.
  bool shouldStop();
  const std::string& stoppedBy() const { return stoppedBy_; }  // "", "interrupt" or "budget"
  double elapsedSeconds() const;
  // Seconds the budget still allows (a large number without --budget).
  double budgetLeftSeconds() const;
  bool hasBudget() const { return budgetSeconds_ > 0; }

  // A phase of `units` measurements predicted to take `estimatedSeconds` in all.
  void beginPhase(const std::string& name, int units, double estimatedSeconds);
  // Before each unit: its name and predicted seconds (rank 0 prints the progress line).
  void beginUnit(const std::string& what, double estimatedSeconds);
  void endPhase();

 private:
  void printProgress(bool final);

  RankExchange* exchange_;
  double budgetSeconds_;
  double start_;
  std::string stoppedBy_;
  bool tty_ = false;
  std::string phase_, unit_;
  int units_ = 0, done_ = 0;
  double phaseStart_ = 0, phaseEstimate_ = 0, estimateDone_ = 0, lastPrint_ = 0;
};

// The time now, in seconds of a monotonic clock.
double monotonicSeconds();

}  // namespace weft::characterize
