// The perf tools' -J FILE: nccl-tests' JSON document (its format version 3, nccl-tests 2.19),
// with the same keys, nesting and value types, so that parsers written for nccl-tests
// (its tools/analyze_perf_json.py among them) read weft's. tests/fixtures/perf holds a
// document nccl-tests' own writer produced; perf/nccl_tests_json.schema.json describes both.
#ifndef WEFT_PERF_PERF_JSON_H_
#define WEFT_PERF_PERF_JSON_H_

#include <cstdint>
#include <string>
#include <vector>

#include "perf/perf_iter_stats.h"
#include "perf/perf_options.h"

namespace weft::perf {

// One rank's "#  Rank" line, as fields ("devices" in the config).
struct PerfJsonDevice {
  int rank = 0, group = 0, pid = 0;
  std::string hostname;
  int device = 0;
  std::string deviceHex;   // nccl-tests: the PCI address; weft on host memory: "0x00"
  std::string deviceInfo;  // nccl-tests: the GPU's name; weft: "host memory" ...
};

// One placement (out of place or in place) of one row.
struct PerfJsonPlacement {
  double timeUs = 0, algBw = 0, busBw = 0;
  int64_t wrong = -1;  // elements that differed; < 0: not checked (null)
  // -I 1 only:
  bool hasIterations = false;
  int skippedIterations = 0;
  IterStats statsUs;                              // of timesUs[skippedIterations..]
  std::vector<double> timesUs;                    // per iteration, the slowest rank's time
  std::vector<std::vector<double>> perProcessUs;  // per rank (each a process), its own times; > 1 rank only
};

struct PerfJsonResult {
  size_t size = 0, count = 0;
  std::string type, redop;
  int root = -1;
  PerfJsonPlacement outOfPlace, inPlace;
  int actualIterations = 0;
};

struct PerfJsonRun {
  std::string startTime, endTime;  // "%Y-%m-%d %H:%M:%S", local time
  std::vector<std::string> args;
  std::vector<std::string> env;  // "NAME=value", secrets already redacted
  int ncclVersion = 0;
  PerfOptions options;
  std::vector<PerfJsonDevice> devices;
  std::vector<PerfJsonResult> results;
  int outOfBounds = 0;  // rows with a wrong element
  double averageBusBw = 0;
  std::vector<std::string> errors;  // nccl-tests: [ncclGetLastError(NULL)]
};

// The document, one line as nccl-tests writes it (numbers "%f", booleans as the strings
// "true"/"false", root as "%6i"), ending in a newline.
std::string formatPerfJson(const PerfJsonRun& run);

// An environment entry as the document records it: the value of a variable whose name says it
// holds a secret (KEY, SECRET, TOKEN, PASSWORD, PASSWD, CREDENTIAL, CERT_KEY...) is replaced by
// "<redacted>", since the file is meant to be shared. nccl-tests records every variable as is.
std::string redactedEnvironmentEntry(const std::string& entry);

// The "#  Rank" line formatRankLine writes, read back into fields; false when it is not one.
bool parseRankLine(const std::string& line, PerfJsonDevice* out);

// The current local time as the document's time stamps write it.
std::string perfJsonTimeNow();

// Creates the output file for -J PATH without replacing an existing one: PATH, else PATH.0,
// PATH.1 ... (as nccl-tests probes). Returns the descriptor and the path chosen, or -1 with
// *error naming the path and the reason.
int createPerfJsonFile(const std::string& path, std::string* chosen, std::string* error);

}  // namespace weft::perf

#endif  // WEFT_PERF_PERF_JSON_H_
