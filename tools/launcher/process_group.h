// Runs the ranks of a local job: fork+exec with per-rank environments, rank-tagged output,
// fail-fast termination, signal forwarding and an optional job time-out.
#ifndef WEFT_TOOLS_LAUNCHER_PROCESS_GROUP_H_
#define WEFT_TOOLS_LAUNCHER_PROCESS_GROUP_H_

#include <string>
#include <vector>

#include "tools/launcher/launch_options.h"

namespace weft::launcher {

// Exit code weftrun reports for a rank's wait status: its exit code, or 128+signal.
int exitCodeForStatus(int waitStatus);
// "exited with code 3" / "was killed by signal 11 (Segmentation fault)".
std::string describeStatus(int waitStatus);

// Starts options.nranks copies of options.command, rank r with environment rankEnvs[r]
// (NAME=VALUE strings), and waits for all of them. Each rank runs in its own process group
// (signals reach the whole rank, including its children), with stdin from /dev/null and its
// stdout/stderr piped back to this process's stdout/stderr, line by line, tagged "[r] ".
//
// Returns the launcher's exit code: 0 when every rank exited 0; the first failing rank's code
// (exitCodeForStatus) after the others were terminated (SIGTERM, SIGKILL after
// options.graceSec); 128+signal when the launcher itself got SIGINT/SIGTERM/SIGHUP (forwarded
// to the ranks); 124 after options.timeoutSec; 127/126 when the command cannot be executed.
//
// `handed`: descriptors that one rank alone inherits (close-on-exec cleared in its child only,
// e.g. the rendezvous socket for rank 0); this process closes its copy once that rank started.
struct HandedDescriptor {
  int rank;
  int fd;
};
// `rankCpus`: the logical CPUs rank r is bound to (sched_setaffinity in its child, before exec);
// a rank without an entry, or with an empty one, is not bound (rank_binding.h plans them).
int runProcessGroup(const LaunchOptions& options, const std::vector<std::vector<std::string>>& rankEnvs,
                    const std::vector<HandedDescriptor>& handed = {},
                    const std::vector<std::vector<int>>& rankCpus = {});

}  // namespace weft::launcher

#endif  // WEFT_TOOLS_LAUNCHER_PROCESS_GROUP_H_
