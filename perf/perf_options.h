// Command line of the nccl-tests-compatible perf tools (same flags, defaults and meanings).
#ifndef WEFT_PERF_PERF_OPTIONS_H_
#define WEFT_PERF_PERF_OPTIONS_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "nccl.h"

namespace weft::perf {

// -D: what the send buffers hold while the collective is timed.
enum class InputData {
  Check,   // nccl-tests' check pattern, written only for -c > 0 (small integers; zeros with -c 0)
  Normal,  // N(0, 1) values, every rank its own, written once per size: gradients as a trainer's
           // compressed all-reduce meets them (top-k on the pattern is a pathological run of ties)
};

struct PerfOptions {
  size_t minBytes = 32u << 20;                      // -b
  size_t maxBytes = 32u << 20;                      // -e
  size_t stepBytes = 1u << 20;                      // -i
  size_t stepFactor = 1;                            // -f (> 1: multiply, else add stepBytes)
  int iters = 20;                                   // -n
  int warmupIters = 5;                              // -w
  int aggIters = 1;                                 // -m: collectives per ncclGroupStart/End in the timed loop
  int check = 1;                                    // -c: data-check iterations per size (0: no check)
  std::vector<ncclRedOp_t> ops = {ncclSum};         // -o
  std::vector<ncclDataType_t> types = {ncclFloat};  // -d
  int root = 0;                                     // -r
  int blocking = 0;                                 // -z: barrier after each collective
  int average = 1;                                  // -a: time reported: 0 rank 0, 1 average, 2 min, 3 max
  int memAlloc = 0;                                 // -R (or WEFT_PERF_MEMALLOC=1): buffers from ncclMemAlloc
  int reportCputime = 0;                            // -C
  int cudaGraph = 0;                                // -G (accepted, ignored: host memory)
  int timeoutSec = 0;                               // -T (accepted; the library's own deadlines apply)
  std::string outputFile;                           // -J: nccl-tests' JSON document (rank 0 writes it)
  int perIterTiming = 0;                            // -I: per-iteration times and their statistics
  int perIterSkip = 0;                              // -K: leading iterations the -I statistics leave out
  InputData data = InputData::Check;                // -D
};

struct PerfParse {
  enum Kind { kRun, kHelp, kError } kind = kError;
  PerfOptions options;
  std::string error;     // kError: one line
  std::string warnings;  // accepted-but-ignored flags, one line each
};

// Pure. argv[0] is the program name. memAllocEnv: value of WEFT_PERF_MEMALLOC (or null).
PerfParse parsePerfArgs(int argc, const char* const* argv, const char* memAllocEnv = nullptr);
std::string perfUsage(const std::string& prog);

// "8", "1K", "64M", "1G", "0.5M", "1MB", "1 KiB" -> bytes (K/M/G are powers of 1024, as in
// nccl-tests). nullopt when not a size.
std::optional<size_t> parseSize(const std::string& text);

// "sum" prod max min avg -> op; "all" -> all five. nullopt when unknown.
std::optional<std::vector<ncclRedOp_t>> parseOps(const std::string& text);
// nccl-tests type names (int8 ... f8e5m2, plus common aliases); "all" -> all twelve.
std::optional<std::vector<ncclDataType_t>> parseTypes(const std::string& text);

// The message sizes of a run: minBytes, then *stepFactor or +stepBytes, up to maxBytes.
std::vector<size_t> sizeSteps(const PerfOptions& options);

}  // namespace weft::perf

#endif  // WEFT_PERF_PERF_OPTIONS_H_
