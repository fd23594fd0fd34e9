#include "perf/perf_options.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>

namespace weft::perf {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool parseInt(const std::string& text, long min, long max, int* out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, 0);
  if (errno || *end != '\0' || v < min || v > max) return false;
  *out = static_cast<int>(v);
  return true;
}

struct Flag {
  char shortName;
  const char* longName;
  const char* help;
};

// nccl-tests' flags, in its order; all take a value except -h.
const Flag kFlags[] = {
    {'t', "nthreads", "<num threads> (1 only: one rank per process)"},
    {'g', "ngpus", "<gpus per thread> (1 only)"},
    {'b', "minbytes", "<min size in bytes> (K/M/G suffixes)"},
    {'e', "maxbytes", "<max size in bytes>"},
    {'i', "stepbytes", "<increment size>"},
    {'f', "stepfactor", "<increment factor>"},
    {'n', "iters", "<iteration count>"},
    {'m', "agg_iters", "<aggregated iteration count>"},
    {'w', "warmup_iters", "<warmup iteration count>"},
    {'p', "parallel_init", "<0/1> (ignored)"},
    {'c', "check", "<check iteration count> (0: no data check)"},
    {'o', "op", "<sum/prod/min/max/avg/all>"},
    {'d', "datatype", "<int8/uint8/int32/uint32/int64/uint64/half/float/double/bfloat16/f8e4m3/f8e5m2/all>"},
    {'r', "root", "<root> (-1: every root in turn)"},
    {'z', "blocking", "<0/1> barrier after each collective"},
    {'y', "stream_null", "<0/1> (ignored: host memory)"},
    {'T', "timeout", "<time in seconds> (ignored)"},
    {'G', "cudagraph", "<num graph launches> (ignored: host memory)"},
    {'C', "report_cputime", "<0/1>"},
    {'a', "average", "<0/1/2/3> report average iteration time <0=RANK0/1=AVG/2=MIN/3=MAX>"},
    {'R', "memalloc", "<0/1> allocate buffers with ncclMemAlloc (also WEFT_PERF_MEMALLOC=1)"},
    {'I', "per_iter_timing", "<0/1> time every iteration: min/max/p99/cv% columns, per-rank times in -J"},
    {'K', "per_iter_skip", "<count> leading iterations the -I statistics leave out (default: 0)"},
    {'J', "output_file", "<file> write nccl-tests' JSON document there (the name must end in .json)"},
    {'D', "data",
     "<check/normal> inputs: the check's pattern (the default; written only for -c > 0) or N(0,1) gradients "
     "(-c 0, floating types; in place they grow by the rank count every call)"},
    {'h', "help", nullptr},
};

const Flag* findShort(char c) {
  for (const Flag& f : kFlags)
    if (f.shortName == c) return &f;
  return nullptr;
}

const Flag* findLong(const std::string& name) {
  for (const Flag& f : kFlags)
    if (name == f.longName) return &f;
  return nullptr;
}

// One flag of the command line and its value (empty for -h).
struct FlagArgument {
  const Flag* flag = nullptr;
  std::string value;
};

// Reads the flag at argv[*i] and its value: "--name=value", "-xvalue", or the next argument
// (then *i moves past it). False with *error when the argument is not a known flag or lacks
// its value.
bool readFlag(int argc, const char* const* argv, int* i, FlagArgument* out, std::string* error) {
  std::string arg = argv[*i];
  bool haveValue = false;
  if (arg.rfind("--", 0) == 0 && arg.size() > 2) {
    std::string name = arg.substr(2);
    size_t eq = name.find('=');
    if (eq != std::string::npos) {
      out->value = name.substr(eq + 1);
      name = name.substr(0, eq);
      haveValue = true;
    }
    out->flag = findLong(name);
  } else if (arg.size() >= 2 && arg[0] == '-') {
    out->flag = findShort(arg[1]);
    if (out->flag && arg.size() > 2) {
      out->value = arg.substr(2);
      haveValue = true;
    }
  } else {
    *error = "unexpected argument '" + arg + "'";
    return false;
  }
  if (!out->flag) {
    *error = "unknown option '" + arg + "'";
    return false;
  }
  if (out->flag->shortName == 'h' || haveValue) return true;
  if (*i + 1 >= argc) {
    *error = std::string("option -") + out->flag->shortName + " needs a value";
    return false;
  }
  out->value = argv[++*i];
  return true;
}

// Sets the option `flag` stands for from its value (warnings for accepted-but-ignored flags
// go to result->warnings). False with *error when the value is not valid for it.
bool applyFlag(const Flag& flag, const std::string& value, PerfParse* result, std::string* error) {
  PerfOptions& o = result->options;
  auto failed = [&](const std::string& message) {
    *error = message;
    return false;
  };
  const std::string what = std::string("-") + flag.shortName + " '" + value + "'";
  int n = 0;
  switch (flag.shortName) {
    case 'b':
    case 'e':
    case 'i': {
      auto size = parseSize(value);
      if (!size) return failed("invalid size " + what);
      if (flag.shortName == 'b') o.minBytes = *size;
      if (flag.shortName == 'e') o.maxBytes = *size;
      if (flag.shortName == 'i') o.stepBytes = *size;
      break;
    }
    case 'f':
      if (!parseInt(value, 0, 1L << 30, &n)) return failed("invalid step factor " + what);
      o.stepFactor = static_cast<size_t>(n);
      break;
    case 'n':
      if (!parseInt(value, 1, 1L << 30, &o.iters)) return failed("invalid iteration count " + what);
      break;
    case 'w':
      if (!parseInt(value, 0, 1L << 30, &o.warmupIters)) return failed("invalid warmup count " + what);
      break;
    case 'm':
      if (!parseInt(value, 1, 1L << 20, &o.aggIters)) return failed("invalid agg iteration count " + what);
      break;
    case 'c':
      if (!parseInt(value, 0, 1L << 20, &o.check)) return failed("invalid check count " + what);
      break;
    case 'o': {
      auto ops = parseOps(value);
      if (!ops) return failed("invalid op " + what + " (sum/prod/min/max/avg/all)");
      o.ops = *ops;
      break;
    }
    case 'd': {
      auto types = parseTypes(value);
      if (!types) return failed("invalid datatype " + what);
      o.types = *types;
      break;
    }
    case 'r':
      if (!parseInt(value, -1, 1L << 30, &o.root)) return failed("invalid root " + what + " (-1: every root)");
      break;
    case 'z':
      if (!parseInt(value, 0, 1, &o.blocking)) return failed("invalid blocking flag " + what);
      break;
    case 'a':
      if (!parseInt(value, 0, 3, &o.average)) return failed("invalid average mode " + what + " (0/1/2/3)");
      break;
    case 'R':
      if (!parseInt(value, 0, 2, &n)) return failed("invalid memalloc flag " + what);
      o.memAlloc = n;
      break;
    case 'C':
      if (!parseInt(value, 0, 1, &o.reportCputime)) return failed("invalid report_cputime flag " + what);
      break;
    case 't':
    case 'g':
      if (!parseInt(value, 1, 1, &n))
        return failed(std::string("-") + flag.shortName +
                      " must be 1: weft's perf tools run one rank per process (start more with "
                      "weftrun -n, mpirun or srun)");
      break;
    case 'G':
      if (!parseInt(value, 0, 1L << 20, &o.cudaGraph)) return failed("invalid graph count " + what);
      if (o.cudaGraph) result->warnings += "# -G (CUDA graphs) ignored: buffers are in host memory\n";
      break;
    case 'T':
      if (!parseInt(value, 0, 1L << 30, &o.timeoutSec)) return failed("invalid timeout " + what);
      break;
    case 'I':
      if (!parseInt(value, 0, 1, &o.perIterTiming)) return failed("invalid per_iter_timing flag " + what + " (0/1)");
      break;
    case 'K':
      if (!parseInt(value, 0, 1L << 30, &o.perIterSkip)) return failed("invalid per_iter_skip count " + what);
      break;
    case 'J': {
      // nccl-tests infers the format from the suffix and writes nothing for another one.
      const size_t dot = value.rfind('.');
      if (value.empty() || dot == std::string::npos || lower(value.substr(dot)) != ".json")
        return failed("-J '" + value + "': only JSON output is supported (a file name ending in .json)");
      o.outputFile = value;
      break;
    }
    case 'D':
      if (lower(value) == "check")
        o.data = InputData::Check;
      else if (lower(value) == "normal")
        o.data = InputData::Normal;
      else
        return failed("invalid input data " + what + " (check/normal)");
      break;
    case 'p':
    case 'y':
      if (!parseInt(value, 0, 1, &n)) return failed("invalid flag " + what);
      break;
  }
  return true;
}

// The sizes a run steps through: minbytes no larger than maxbytes, and a step that gets there.
bool checkSizes(const PerfOptions& o, std::string* error) {
  if (o.minBytes > o.maxBytes) {
    *error = "invalid sizes for 'minbytes' and 'maxbytes': " + std::to_string(o.minBytes) + " > " +
             std::to_string(o.maxBytes);
    return false;
  }
  if (o.stepFactor <= 1 && o.stepBytes == 0 && o.minBytes != o.maxBytes) {
    *error = "step of 0 bytes (-i 0 without -f > 1) would never reach maxbytes";
    return false;
  }
  return true;
}

}  // namespace

std::optional<size_t> parseSize(const std::string& text) {
  const char* s = text.c_str();
  while (std::isspace(static_cast<unsigned char>(*s))) ++s;
  if (*s == '-' || *s == '\0') return std::nullopt;
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(s, &end);
  if (end == s || errno || !std::isfinite(v) || v < 0) return std::nullopt;
  while (std::isspace(static_cast<unsigned char>(*end))) ++end;
  double unit = 1;
  switch (std::tolower(static_cast<unsigned char>(*end))) {
    case 'k':
      unit = 1024.0;
      ++end;
      break;
    case 'm':
      unit = 1024.0 * 1024;
      ++end;
      break;
    case 'g':
      unit = 1024.0 * 1024 * 1024;
      ++end;
      break;
    case 't':
      unit = 1024.0 * 1024 * 1024 * 1024;
      ++end;
      break;
    default: break;
  }
  std::string rest = lower(end);
  if (!rest.empty() && rest != "b" && !(unit > 1 && rest == "ib")) return std::nullopt;
  double bytes = v * unit;
  if (bytes > 1.8e19) return std::nullopt;
  return static_cast<size_t>(bytes);
}

std::optional<std::vector<ncclRedOp_t>> parseOps(const std::string& text) {
  std::string t = lower(text);
  if (t == "all") return std::vector<ncclRedOp_t>{ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
  static const std::map<std::string, ncclRedOp_t> kOps = {
      {"sum", ncclSum}, {"prod", ncclProd}, {"max", ncclMax}, {"min", ncclMin}, {"avg", ncclAvg}};
  auto it = kOps.find(t);
  if (it == kOps.end()) return std::nullopt;
  return std::vector<ncclRedOp_t>{it->second};
}

std::optional<std::vector<ncclDataType_t>> parseTypes(const std::string& text) {
  std::string t = lower(text);
  if (t == "all")
    return std::vector<ncclDataType_t>{ncclInt8,    ncclUint8,    ncclInt32,      ncclUint32,
                                       ncclInt64,   ncclUint64,   ncclFloat16,    ncclFloat32,
                                       ncclFloat64, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2};
  static const std::map<std::string, ncclDataType_t> kTypes = {{"int8", ncclInt8},
                                                               {"char", ncclInt8},
                                                               {"uint8", ncclUint8},
                                                               {"int32", ncclInt32},
                                                               {"int", ncclInt32},
                                                               {"uint32", ncclUint32},
                                                               {"int64", ncclInt64},
                                                               {"uint64", ncclUint64},
                                                               {"half", ncclFloat16},
                                                               {"float16", ncclFloat16},
                                                               {"fp16", ncclFloat16},
                                                               {"float", ncclFloat32},
                                                               {"float32", ncclFloat32},
                                                               {"fp32", ncclFloat32},
                                                               {"double", ncclFloat64},
                                                               {"float64", ncclFloat64},
                                                               {"fp64", ncclFloat64},
                                                               {"bfloat16", ncclBfloat16},
                                                               {"bf16", ncclBfloat16},
                                                               {"f8e4m3", ncclFloat8e4m3},
                                                               {"fp8e4m3", ncclFloat8e4m3},
                                                               {"float8e4m3", ncclFloat8e4m3},
                                                               {"f8e5m2", ncclFloat8e5m2},
                                                               {"fp8e5m2", ncclFloat8e5m2},
                                                               {"float8e5m2", ncclFloat8e5m2}};
  auto it = kTypes.find(t);
  if (it == kTypes.end()) return std::nullopt;
  return std::vector<ncclDataType_t>{it->second};
}

std::vector<size_t> sizeSteps(const PerfOptions& o) {
  std::vector<size_t> sizes;
  if (o.stepFactor <= 1 && o.stepBytes == 0) return {o.minBytes};
  for (size_t size = o.minBytes; size <= o.maxBytes;) {
    sizes.push_back(size);
    size_t next = o.stepFactor > 1 ? size * o.stepFactor : size + o.stepBytes;
    if (next <= size) {  // 0 * factor, or overflow
      if (size == 0 && o.stepFactor > 1) {
        next = 1;  // nccl-tests would loop forever on -b 0 -f 2; go on from 1 byte
      } else {
        break;
      }
    }
    size = next;
  }
  return sizes;
}

PerfParse parsePerfArgs(int argc, const char* const* argv, const char* memAllocEnv) {
  PerfParse result;
  PerfOptions& o = result.options;
  auto fail = [&](const std::string& message) {
    result.kind = PerfParse::kError;
    result.error = message;
    return result;
  };
  if (memAllocEnv && *memAllocEnv && std::strcmp(memAllocEnv, "0") != 0) o.memAlloc = 1;

  std::string error;
  for (int i = 1; i < argc; ++i) {
    FlagArgument arg;
    if (!readFlag(argc, argv, &i, &arg, &error)) return fail(error);
    if (arg.flag->shortName == 'h') {
      result.kind = PerfParse::kHelp;
      return result;
    }
    if (!applyFlag(*arg.flag, arg.value, &result, &error)) return fail(error);
  }
  if (!checkSizes(o, &error)) return fail(error);
  if (o.perIterSkip >= o.iters)
    return fail("-K " + std::to_string(o.perIterSkip) + " leaves none of the " + std::to_string(o.iters) +
                " iterations (-n) for the -I statistics");
  if (o.data == InputData::Normal) {
    if (o.check) return fail("-D normal needs -c 0: random gradients have no reference result to check against");
    for (ncclDataType_t type : o.types)
      if (type != ncclFloat16 && type != ncclFloat32 && type != ncclFloat64 && type != ncclBfloat16)
        return fail("-D normal needs a floating type (half, float, double, bfloat16)");
  }
  if (o.perIterSkip && !o.perIterTiming) {
    result.warnings += "# -K ignored: it applies to -I 1's statistics\n";
    o.perIterSkip = 0;
  }
  result.kind = PerfParse::kRun;
  return result;
}

std::string perfUsage(const std::string& prog) {
  std::string s = "USAGE: " + prog + " \n\t";
  for (const Flag& f : kFlags) {
    if (f.shortName == 'h') continue;
    s += std::string("[-") + f.shortName + "," + "--" + f.longName + " " + f.help + "] \n\t";
  }
  s += "[-h,--help]\n";
  s += "\nRun one process per rank: weftrun -n N " + prog +
       " ..., mpirun -np N ..., or srun -n N ...\n"
       "(the communicator comes from weftCommInitFromEnv).\n";
  return s;
}

}  // namespace weft::perf
