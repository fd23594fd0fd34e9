#include "tools/characterize/run_control.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>

namespace weft::characterize {
namespace {

std::atomic<int> receivedSignal{0};

void onInterrupt(int signal) {
  int none = 0;
  receivedSignal.compare_exchange_strong(none, signal);  // SA_RESETHAND: a second one ends the process
}

std::string minutesSeconds(double seconds) {
  const int s = static_cast<int>(std::max(0.0, seconds) + 0.5);
  char text[32];
  std::snprintf(text, sizeof(text), "%d:%02d", s / 60, s % 60);
  return text;
}

}  // namespace

double monotonicSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void RunControl::installInterruptHandler() {
  struct sigaction action {};
  action.sa_handler = onInterrupt;
  sigemptyset(&action.sa_mask);
  // weft's waits resume after the handler; the loop checks the flag between measurements.
  action.sa_flags = SA_RESTART | SA_RESETHAND;
  for (int signal : {SIGINT, SIGTERM, SIGHUP}) sigaction(signal, &action, nullptr);
}

int RunControl::interruptSignal() { return receivedSignal.load(); }

RunControl::RunControl(RankExchange* exchange, double budgetSeconds)
    : exchange_(exchange), budgetSeconds_(budgetSeconds), start_(monotonicSeconds()), tty_(isatty(2) != 0) {}

double RunControl::elapsedSeconds() const { return monotonicSeconds() - start_; }

double RunControl::budgetLeftSeconds() const { return budgetSeconds_ > 0 ? budgetSeconds_ - elapsedSeconds() : 1e30; }

bool RunControl::shouldStop() {
  if (!stoppedBy_.empty()) return true;
  const bool interrupted = receivedSignal.load() != 0;
  const bool overBudget = exchange_->rank() == 0 && budgetSeconds_ > 0 && budgetLeftSeconds() <= 0;
  // Two agreed flags in one reduction: 2 = interrupt (wins), 1 = budget.
  const double verdict = exchange_->maxOverRanks(interrupted ? 2.0 : overBudget ? 1.0 : 0.0);
  if (verdict >= 2) stoppedBy_ = "interrupt";
  if (verdict == 1) stoppedBy_ = "budget";
  if (!stoppedBy_.empty() && exchange_->rank() == 0) {
    std::fprintf(stderr, "%sweft-characterize: %s; writing what was measured\n", tty_ ? "\n" : "",
                 stoppedBy_ == "interrupt" ? "interrupted" : "budget spent");
  }
  return !stoppedBy_.empty();
}

void RunControl::beginPhase(const std::string& name, int units, double estimatedSeconds) {
  phase_ = name;
  units_ = units;
  done_ = 0;
  phaseStart_ = monotonicSeconds();
  phaseEstimate_ = estimatedSeconds;
  estimateDone_ = 0;
  lastPrint_ = 0;
}

void RunControl::beginUnit(const std::string& what, double estimatedSeconds) {
  unit_ = what;
  printProgress(false);
  ++done_;
  estimateDone_ += estimatedSeconds;
}

void RunControl::endPhase() {
  done_ = units_;
  printProgress(true);
}

// "[ 12/96] sweep: all_reduce ring 1M   elapsed 0:35, about 0:20 left": the time left is the
// cost model's estimate of what remains, scaled by how far the finished units were off.
void RunControl::printProgress(bool final) {
  if (exchange_->rank() != 0) return;
  const double now = monotonicSeconds();
  if (!tty_ && !final && now - lastPrint_ < 5.0 && done_ > 0) return;  // a log gets a line every 5 s
  lastPrint_ = now;
  const double spent = now - phaseStart_;
  const double scale = estimateDone_ > 0 && spent > 0 ? spent / estimateDone_ : 1.0;
  const double left = std::max(0.0, phaseEstimate_ - estimateDone_) * scale;
  char line[256];
  if (final) {
    std::snprintf(line, sizeof(line), "[%d/%d] %s done in %s (elapsed %s)", units_, units_, phase_.c_str(),
                  minutesSeconds(spent).c_str(), minutesSeconds(elapsedSeconds()).c_str());
  } else {
    std::snprintf(line, sizeof(line), "[%d/%d] %s: %s   elapsed %s, about %s left", done_ + 1, units_, phase_.c_str(),
                  unit_.c_str(), minutesSeconds(elapsedSeconds()).c_str(), minutesSeconds(left).c_str());
  }
  if (tty_) {
    std::fprintf(stderr, "\r\033[K%s%s", line, final ? "\n" : "");
  } else {
    std::fprintf(stderr, "%s\n", line);
  }
}

}  // namespace weft::characterize
