// weft-characterize's command line.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace weft::characterize {

struct CharacterizeOptions {
  std::string outDir = "characterization";  // --out: JSON, report, plots, tuning file
  size_t minBytes = 8;                      // --min-size
  size_t maxBytes = 64u << 20;              // --max-size
  int factor = 4;                           // --factor: sizes grow by this much
  int iters = 20;                           // -n: timed iterations per size
  int warmup = 5;                           // -w
  double budgetSeconds = 0;                 // --budget: 0 means none
  size_t p2pMaxBytes = 4u << 20;            // --p2p-size: the largest point-to-point message
  std::vector<std::string> collectives;     // --collectives a,b: nccl-tests names; empty: all
  std::string baseline;                     // --baseline FILE: an earlier run's JSON
  std::string rules;                        // --rules FILE: regression rules for --baseline
  bool report = true;                       // --no-report: the JSON and tuning file only
  bool verifyTuning = true;                 // --no-verify: fit, but skip measuring tuned against default
};

struct CharacterizeParse {
  enum Kind { kRun, kHelp, kError } kind = kError;
  CharacterizeOptions options;
  std::string error;  // kError: one line naming the argument
};

// Pure. argv[0] is the program name.
CharacterizeParse parseCharacterizeArgs(int argc, const char* const* argv);
std::string characterizeUsage();

// The sweep's sizes: minBytes, then times factor, up to maxBytes.
std::vector<size_t> sweepSizes(size_t minBytes, size_t maxBytes, int factor);

}  // namespace weft::characterize
