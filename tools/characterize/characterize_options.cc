#include "tools/characterize/characterize_options.h"

#include <cstdlib>
#include <cstring>
#include <optional>

#include "perf/perf_options.h"

namespace weft::characterize {

std::string characterizeUsage() {
  return "usage: weft-characterize [--out DIR] [--min-size 8] [--max-size 64M] [--factor 4] [-n 20] [-w 5]\n"
         "                         [--budget SECONDS] [--p2p-size 4M] [--collectives all_reduce,...]\n"
         "                         [--baseline FILE [--rules FILE]] [--no-report] [--no-verify]\n"
         "Run one process per rank under any launcher (weftrun, mpirun, srun, torchrun). Measures every\n"
         "host's topology, point-to-point latency and bandwidth between every pair of ranks, and every\n"
         "collective with every algorithm at each size (checked); fits the cost model's terms per link\n"
         "class, writes DIR/weft.tuning (WEFT_TUNING_FILE), measures tuned against default choices, and\n"
         "writes DIR/characterize.json, DIR/report.md, DIR/report.html and the plots. Ctrl-C stops the\n"
         "measurements and still writes what was measured; --budget shrinks the sweep to fit.\n";
}

namespace {

bool parseInt(const char* text, int low, int high, int* out) {
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (!*text || *end || v < low || v > high) return false;
  *out = static_cast<int>(v);
  return true;
}

std::vector<std::string> splitList(const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    if (comma > start) items.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}

}  // namespace

CharacterizeParse parseCharacterizeArgs(int argc, const char* const* argv) {
  CharacterizeParse parse;
  CharacterizeOptions& o = parse.options;
  auto error = [&](const std::string& message) {
    parse.kind = CharacterizeParse::kError;
    parse.error = message;
    return parse;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      parse.kind = CharacterizeParse::kHelp;
      return parse;
    }
    if (arg == "--no-report") {
      o.report = false;
      continue;
    }
    if (arg == "--no-verify") {
      o.verifyTuning = false;
      continue;
    }
    if (i + 1 >= argc) return error(arg + " needs a value (or is unknown); see --help");
    const char* value = argv[++i];
    if (arg == "--out") {
      o.outDir = value;
    } else if (arg == "--min-size" || arg == "--max-size" || arg == "--p2p-size") {
      std::optional<size_t> bytes = perf::parseSize(value);
      if (!bytes || *bytes == 0) return error(arg + ": '" + value + "' is not a size (8, 64K, 16M, 1G)");
      (arg == "--min-size" ? o.minBytes : arg == "--max-size" ? o.maxBytes : o.p2pMaxBytes) = *bytes;
    } else if (arg == "--factor") {
      if (!parseInt(value, 2, 1024, &o.factor)) return error("--factor: '" + std::string(value) + "' is not 2..1024");
    } else if (arg == "-n") {
      if (!parseInt(value, 1, 1000000, &o.iters)) return error("-n: '" + std::string(value) + "' is not 1..1000000");
    } else if (arg == "-w") {
      if (!parseInt(value, 0, 1000000, &o.warmup)) return error("-w: '" + std::string(value) + "' is not 0..1000000");
    } else if (arg == "--budget") {
      char* end = nullptr;
      o.budgetSeconds = std::strtod(value, &end);
      if (!*value || *end || !(o.budgetSeconds > 0))
        return error("--budget: '" + std::string(value) + "' is not a positive number of seconds");
    } else if (arg == "--collectives") {
      o.collectives = splitList(value);
      if (o.collectives.empty()) return error("--collectives: names no collective");
    } else if (arg == "--baseline") {
      o.baseline = value;
    } else if (arg == "--rules") {
      o.rules = value;
    } else {
      return error("unknown argument '" + arg + "'; see --help");
    }
  }
  if (o.minBytes > o.maxBytes) return error("--min-size is larger than --max-size");
  if (!o.rules.empty() && o.baseline.empty()) return error("--rules applies to --baseline, which is not given");
  parse.kind = CharacterizeParse::kRun;
  return parse;
}

std::vector<size_t> sweepSizes(size_t minBytes, size_t maxBytes, int factor) {
  std::vector<size_t> sizes;
  for (size_t s = minBytes; s <= maxBytes; s *= static_cast<size_t>(factor)) {
    sizes.push_back(s);
    if (s > maxBytes / static_cast<size_t>(factor)) break;
  }
  return sizes;
}

}  // namespace weft::characterize
