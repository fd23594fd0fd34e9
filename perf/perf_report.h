// nccl-tests' text output, byte for byte, so existing parsers of nccl-tests logs work.
#ifndef WEFT_PERF_PERF_REPORT_H_
#define WEFT_PERF_PERF_REPORT_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "perf/perf_iter_stats.h"
#include "perf/perf_options.h"

namespace weft::perf {

// "# nThread 1 nGpus 1 minBytes 8 maxBytes ... graph: 0\n" plus the -z line when blocking.
std::string formatRunHeader(const PerfOptions& options);
// "#  Rank  0 Group  0 Pid  12345 on   hostname device  0 [0x00] name\n"
std::string formatRankLine(int rank, int group, int pid, const std::string& host, int device, int busId,
                           const std::string& deviceName);
// The three column-header lines (out-of-place / in-place, names, units), each ending '\n';
// with perIteration (-I 1), each placement also has the i_min, i_max, i_p99 and i_cv% columns.
std::string formatColumnHeader(bool reportCputime, bool perIteration = false);
// Time in microseconds as nccl-tests prints it: %7.0f (>= 10000), %7.1f (>= 100), else %7.2f.
std::string formatTime(double microseconds);
// Leading columns of a row: size (B), count (elements), type, redop, root.
std::string formatRowStart(size_t bytes, size_t count, const char* type, const char* op, int root);
// One placement's columns: time, algbw, busbw, #wrong (wrong < 0: "N/A", no check).
std::string formatRowResult(double microseconds, double algBw, double busBw, int64_t wrong);
// value in `width` columns with as many of 2, 1, 0 decimals as fit, else in exponent notation.
std::string formatFitted(double value, int width);
// One placement's -I columns: i_min, i_max, i_p99 (us) and i_cv% (stats in microseconds).
std::string formatIterColumns(const IterStats& statsUs);
// "# Out of bounds values : N OK|FAILED\n# Avg bus bandwidth    : X \n#\n"
std::string formatSummary(int errors, double avgBusBw);

// Bandwidths in GB/s (1e9 bytes/s): algbw = bytes moved per rank / time, busbw = algbw *
// busFactor. bytes = count * typeSize * algFactor.
struct Bandwidth {
  double algBw;
  double busBw;
};
Bandwidth computeBandwidth(size_t count, size_t typeSize, double seconds, double algFactor, double busFactor);

}  // namespace weft::perf

#endif  // WEFT_PERF_PERF_REPORT_H_
