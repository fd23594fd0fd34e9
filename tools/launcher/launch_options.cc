#include "tools/launcher/launch_options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace weft::launcher {
namespace {

bool parseInt(const std::string& text, int* out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v < -1000000000L || v > 1000000000L) return false;
  *out = static_cast<int>(v);
  return true;
}

bool parseSeconds(const std::string& text, double* out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(v) || v < 0) return false;
  *out = v;
  return true;
}

LaunchParse error(std::string message) {
  LaunchParse p;
  p.kind = LaunchParse::kError;
  p.error = std::move(message);
  return p;
}

}  // namespace

LaunchParse parseLaunchArgs(int argc, const char* const* argv) {
  LaunchParse result;
  LaunchOptions& o = result.options;
  bool haveN = false;
  int i = 1;
  // Value of an option given as "--opt V", "--opt=V" or (short) "-nV".
  auto takeValue = [&](const std::string& arg, const std::string& name, std::string* value) -> bool {
    if (arg == name) {
      if (i + 1 >= argc) return false;
      *value = argv[++i];
      return true;
    }
    *value = arg.substr(name.size() + (arg[name.size()] == '=' ? 1 : 0));
    return true;
  };
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.empty() || arg[0] != '-' || arg == "-") break;
    std::string value;
    if (arg == "-h" || arg == "--help") {
      result.kind = LaunchParse::kHelp;
      return result;
    } else if (arg == "--no-prefix") {
      o.prefix = false;
    } else if (arg == "-n" || arg == "-np" || arg == "--nproc" || arg.rfind("--nproc=", 0) == 0 ||
               (arg.size() > 2 && arg.rfind("-n", 0) == 0 && arg[2] >= '0' && arg[2] <= '9')) {
      std::string name = arg.rfind("--nproc", 0) == 0 ? "--nproc" : arg == "-np" ? "-np" : "-n";
      if (!takeValue(arg, name, &value)) return error("option " + name + " needs a value");
      if (!parseInt(value, &o.nranks)) return error("invalid number of ranks '" + value + "'");
      if (o.nranks < 1) return error("the number of ranks must be at least 1 (got " + value + ")");
      haveN = true;
    } else if (arg == "--bind-to" || arg.rfind("--bind-to=", 0) == 0) {
      if (!takeValue(arg, "--bind-to", &value)) return error("option --bind-to needs a value");
      if (!parseBindPolicy(value, &o.bind)) return error("invalid --bind-to '" + value + "' (auto, core or none)");
    } else if (arg == "--timeout" || arg.rfind("--timeout=", 0) == 0) {
      if (!takeValue(arg, "--timeout", &value)) return error("option --timeout needs a value");
      if (!parseSeconds(value, &o.timeoutSec)) return error("invalid --timeout '" + value + "'");
    } else {
      return error("unknown option '" + arg + "'");
    }
  }
  for (; i < argc; ++i) o.command.emplace_back(argv[i]);
  if (!haveN) return error("missing -n N (number of ranks)");
  if (o.command.empty()) return error("no command given");
  result.kind = LaunchParse::kRun;
  return result;
}

std::string launchUsage(const std::string& prog) {
  return "usage: " + prog +
         " -n N [--timeout SECONDS] [--no-prefix] [--bind-to auto|core|none] [--] CMD [ARGS...]\n"
         "\n"
         "Starts N ranks of CMD on this host. Each rank gets RANK, WORLD_SIZE, LOCAL_RANK,\n"
         "LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1, MASTER_PORT (a free port) and WEFT_SECRET\n"
         "(a fresh random secret) in its environment; its stdin is /dev/null. Every line a rank\n"
         "writes to stdout or stderr is tagged \"[rank] \" (--no-prefix: untagged, still whole).\n"
         "\n"
         "If a rank exits non-zero or is killed, the others get SIGTERM and, 2 s later, SIGKILL;\n"
         "weftrun then exits with the failing rank's exit code (128+signal if killed).\n"
         "SIGINT/SIGTERM/SIGHUP to weftrun are forwarded to the ranks (a second one kills them).\n"
         "\n"
         "  -n, --nproc N        number of ranks (required, >= 1)\n"
         "  --timeout SECONDS    terminate the ranks after SECONDS and exit 124 (default: none)\n"
         "  --no-prefix          do not tag output lines with the rank\n"
         "  --bind-to POLICY     the CPUs each rank runs on, among those weftrun may use:\n"
         "                       auto (default): an equal, disjoint block of whole cores each,\n"
         "                       nothing when the ranks outnumber the cores; core: one core each\n"
         "                       (an error when the ranks outnumber the cores); none\n"
         "  -h, --help           this text\n";
}

}  // namespace weft::launcher
