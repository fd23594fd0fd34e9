// weftrun: starts N local ranks of a program with the environment weftCommInitFromEnv reads.
//   weftrun -n N [--timeout SECONDS] [--no-prefix] [--bind-to auto|core|none] [--] CMD ARGS...
#include <cstdio>
#include <string>
#include <vector>

#include "tools/launcher/launch_env.h"
#include "tools/launcher/launch_options.h"
#include "tools/launcher/process_group.h"
#include "tools/launcher/rank_binding.h"

using namespace weft::launcher;

int main(int argc, char** argv) {
  std::string prog = "weftrun";
  LaunchParse parsed = parseLaunchArgs(argc, argv);
  if (parsed.kind == LaunchParse::kHelp) {
    std::fputs(launchUsage(prog).c_str(), stdout);
    return 0;
  }
  if (parsed.kind == LaunchParse::kError) {
    std::fprintf(stderr, "weftrun: %s\n%s", parsed.error.c_str(), launchUsage(prog).c_str());
    return 2;
  }
  const LaunchOptions& options = parsed.options;

  std::string error;
  JobEnv job;
  job.worldSize = options.nranks;
  const RendezvousSocket rendezvous = openRendezvousSocket(job.masterAddr, &error);
  if (rendezvous.fd < 0) {
    std::fprintf(stderr, "weftrun: cannot open the rendezvous port: %s\n", error.c_str());
    return 1;
  }
  job.port = rendezvous.port;
  job.bootstrapFd = rendezvous.fd;
  job.secret = randomSecretHex(&error);
  if (job.secret.empty()) {
    std::fprintf(stderr, "weftrun: %s\n", error.c_str());
    return 1;
  }
  std::vector<std::string> base = currentEnvironment();
  std::vector<std::vector<std::string>> envs;
  for (int r = 0; r < options.nranks; ++r) envs.push_back(rankEnvironment(base, job, r));
  std::vector<std::vector<int>> rankCpus;
  if (options.bind != BindPolicy::None)
    rankCpus = planRankCpus(usableCores(&error), options.nranks, options.bind, &error);
  if (rankCpus.empty() && options.bind == BindPolicy::Core) {
    std::fprintf(stderr, "weftrun: --bind-to core: %s\n", error.c_str());
    return 2;
  }
  std::fflush(nullptr);
  return runProcessGroup(options, envs, {{0, rendezvous.fd}}, rankCpus);
}
