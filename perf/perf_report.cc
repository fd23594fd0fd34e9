#include "perf/perf_report.h"

#include <cstdarg>
#include <cstdio>

namespace weft::perf {
namespace {

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (n < 0) return {};
  return std::string(buf, static_cast<size_t>(n) < sizeof(buf) ? static_cast<size_t>(n) : sizeof(buf) - 1);
}

}  // namespace

std::string formatRunHeader(const PerfOptions& o) {
  std::string s = format(
      "# nThread %d nGpus %d minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d iters: %d agg "
      "iters: %d validation: %d graph: %d\n",
      1, 1, o.minBytes, o.maxBytes, o.stepFactor > 1 ? o.stepFactor : o.stepBytes,
      o.stepFactor > 1 ? "factor" : "bytes", o.warmupIters, o.iters, o.aggIters, o.check, o.cudaGraph);
  if (o.blocking) s += "# Blocking Enabled: wait for completion and barrier after each collective \n";
  if (o.perIterTiming) {
    s += "# Per-Iteration Report: host wall-clock timing; i_* uses max over process rows";
    if (o.perIterSkip) s += format("; summary skips first %d iterations", o.perIterSkip);
    s += " \n";
  }
  return s;
}

std::string formatRankLine(int rank, int group, int pid, const std::string& host, int device, int busId,
                           const std::string& deviceName) {
  return format("#  Rank %2d Group %2d Pid %6d on %10s device %2d [0x%02x] %s\n", rank, group, pid, host.c_str(),
                device, busId, deviceName.c_str());
}

std::string formatColumnHeader(bool reportCputime, bool perIteration) {
  const char* timeStr = reportCputime ? "cputime" : "time";
  if (perIteration) {
    // nccl-tests' -I layout: each placement's columns followed by its i_* columns.
    std::string s = format(
        "# %10s  %12s  %8s  %6s  %6s              out-of-place (+ per-iteration)"
        "                                in-place (+ per-iteration)\n",
        "", "", "", "", "");
    s += format(
        "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %7s  %7s  %7s  %7s  %6s  %6s %6s  %7s  %7s  %7s  %7s\n",
        "size", "count", "type", "redop", "root", timeStr, "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99",
        "i_cv%", timeStr, "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99", "i_cv%");
    s += format(
        "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %7s  %7s  %7s  %7s  %6s  %6s  %5s  %7s  %7s  %7s  %7s\n",
        "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)", "(us)",
        "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)");
    return s;
  }
  std::string s =
      format("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "",
             "", "", "");
  s += format("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n", "size", "count", "type", "redop",
              "root", timeStr, "algbw", "busbw", "#wrong", timeStr, "algbw", "busbw", "#wrong");
  s += format("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)", "(elements)", "", "", "",
              "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  return s;
}

std::string formatTime(double us) {
  if (us >= 10000.0) return format("%7.0f", us);
  if (us >= 100.0) return format("%7.1f", us);
  return format("%7.2f", us);
}

std::string formatRowStart(size_t bytes, size_t count, const char* type, const char* op, int root) {
  return format("%12zu  %12zu  %8s  %6s  %6i", bytes, count, type, op, root);
}

std::string formatRowResult(double us, double algBw, double busBw, int64_t wrong) {
  std::string t = formatTime(us);
  if (wrong < 0) return format("  %7s  %6.2f  %6.2f  %5s", t.c_str(), algBw, busBw, "N/A");
  return format("  %7s  %6.2f  %6.2f  %5lld", t.c_str(), algBw, busBw, static_cast<long long>(wrong));
}

std::string formatFitted(double value, int width) {
  // nccl-tests' getFloatStr: the most decimals that fit the column, then exponent notation.
  for (const char* f : {"%*.2f", "%*.1f", "%*.0f"}) {
    std::string s = format(f, width, value);
    if (static_cast<int>(s.size()) <= width) return s;
  }
  return format(width >= 7 ? "%*.1e" : "%*.0e", width, value);
}

std::string formatIterColumns(const IterStats& us) {
  return "  " + formatFitted(us.min, 7) + "  " + formatFitted(us.max, 7) + "  " + formatFitted(us.p99, 7) + "  " +
         formatFitted(us.cvPct, 7);
}

std::string formatSummary(int errors, double avgBusBw) {
  std::string s = format("# Out of bounds values : %d %s\n", errors, errors ? "FAILED" : "OK");
  s += format("# Avg bus bandwidth    : %g %s\n", avgBusBw, "");
  s += "#\n";
  return s;
}

Bandwidth computeBandwidth(size_t count, size_t typeSize, double seconds, double algFactor, double busFactor) {
  if (seconds <= 0) return {0.0, 0.0};
  double algBw = static_cast<double>(count) * static_cast<double>(typeSize) * algFactor / 1.0e9 / seconds;
  return {algBw, algBw * busFactor};
}

}  // namespace weft::perf
