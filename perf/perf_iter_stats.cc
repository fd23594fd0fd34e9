#include "perf/perf_iter_stats.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace weft::perf {
namespace {

// nccl-tests' percentileIndex: the nearest-rank percentile, never past the last element.
size_t percentileIndex(size_t n, size_t percentile) { return std::min(n - 1, (n * percentile + 99) / 100 - 1); }

}  // namespace

IterStats computeIterStats(const std::vector<double>& times, int skip) {
  if (skip < 0 || static_cast<size_t>(skip) >= times.size())
    throw std::invalid_argument("computeIterStats: skipping " + std::to_string(skip) + " of " +
                                std::to_string(times.size()) + " times leaves none");
  std::vector<double> sorted(times.begin() + skip, times.end());
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  IterStats s;
  s.min = sorted.front();
  s.max = sorted.back();
  s.p50 = sorted[n / 2];
  s.p95 = sorted[percentileIndex(n, 95)];
  s.p99 = sorted[percentileIndex(n, 99)];
  double sum = 0;
  for (double t : sorted) sum += t;
  s.avg = sum / static_cast<double>(n);
  double squares = 0;
  for (double t : sorted) squares += (t - s.avg) * (t - s.avg);
  s.stdev = std::sqrt(squares / static_cast<double>(n));
  s.cvPct = s.avg > 0 ? s.stdev / s.avg * 100.0 : 0.0;
  return s;
}

std::vector<double> slowestRankPerIteration(const std::vector<double>& rows, int nranks, int iters) {
  std::vector<double> slowest(static_cast<size_t>(iters), 0.0);
  for (int r = 0; r < nranks; ++r)
    for (int i = 0; i < iters; ++i) slowest[i] = std::max(slowest[i], rows[static_cast<size_t>(r) * iters + i]);
  return slowest;
}

}  // namespace weft::perf
