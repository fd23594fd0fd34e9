// Statistics of one test's per-iteration times (-I 1), defined as nccl-tests defines them, so
// that its analysis scripts read weft's figures the same way.
#ifndef WEFT_PERF_PERF_ITER_STATS_H_
#define WEFT_PERF_PERF_ITER_STATS_H_

#include <vector>

namespace weft::perf {

struct IterStats {
  double min = 0, max = 0, avg = 0;
  double p50 = 0, p95 = 0, p99 = 0;  // nearest rank: sorted[ceil(n * p / 100) - 1]; p50 is sorted[n / 2]
  double stdev = 0;                  // population standard deviation
  double cvPct = 0;                  // stdev / avg in percent (0 when avg is 0)
};

// Statistics of times[skip..]; skip must leave at least one time. Units are the caller's.
IterStats computeIterStats(const std::vector<double>& times, int skip = 0);

// Per iteration, the largest of the ranks' times: the time the job waited for that iteration.
// rows holds nranks rows of `iters` times each, row-major.
std::vector<double> slowestRankPerIteration(const std::vector<double>& rows, int nranks, int iters);

}  // namespace weft::perf

#endif  // WEFT_PERF_PERF_ITER_STATS_H_
