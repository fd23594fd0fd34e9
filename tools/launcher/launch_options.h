// weftrun's command line: weftrun -n N [--timeout SECONDS] [--no-prefix] [--bind-to auto|core|none]
// [--] CMD ARGS...
#ifndef WEFT_TOOLS_LAUNCHER_LAUNCH_OPTIONS_H_
#define WEFT_TOOLS_LAUNCHER_LAUNCH_OPTIONS_H_

#include <string>
#include <vector>

#include "tools/launcher/rank_binding.h"

namespace weft::launcher {

struct LaunchOptions {
  int nranks = 0;                      // -n N: number of local ranks (>= 1)
  double timeoutSec = 0.0;             // --timeout S: terminate the job after S seconds (0: never)
  double graceSec = 2.0;               // SIGTERM -> SIGKILL grace period
  bool prefix = true;                  // --no-prefix: keep lines whole but do not tag them "[rank] "
  BindPolicy bind = BindPolicy::Auto;  // --bind-to: which CPUs each rank runs on (rank_binding.h)
  std::vector<std::string> command;    // program and its arguments
};

struct LaunchParse {
  enum Kind { kRun, kHelp, kError } kind = kError;
  LaunchOptions options;
  std::string error;  // for kError: what was wrong, one line
};

// Pure: parses argv (argv[0] is the launcher's name). Options end at the first argument that
// does not start with '-' or after "--"; everything from there on is the command.
LaunchParse parseLaunchArgs(int argc, const char* const* argv);

std::string launchUsage(const std::string& prog);

}  // namespace weft::launcher

#endif  // WEFT_TOOLS_LAUNCHER_LAUNCH_OPTIONS_H_
