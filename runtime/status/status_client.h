// Asking weft processes on this host where their communicators stand (status_server.h): how
// `weft-info status` and a rank whose call timed out reach them. Every process is asked at
// once and waited for together, so a silent one costs the time-out once, not per process.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "runtime/status/job_diagnosis.h"
#include "runtime/status/status_report.h"

namespace weft {

// The pids of this host's (this network namespace's) weft processes with a status server.
std::vector<int> findStatusServers();

struct StatusReply {
  int pid = 0;
  bool answered = false;
  std::string error;  // why not
  std::vector<RankStatus> communicators;
};
// Sends `request` to each pid's server; waits at most `timeoutSeconds` for all of them.
std::vector<StatusReply> askStatusServers(const std::vector<int>& pids, const std::string& request,
                                          double timeoutSeconds);

// The hosts (RankInfo host names) of the communicators in `replies`: this host's, when the
// replies came from this host's processes.
std::set<std::string> answeringHosts(const std::vector<StatusReply>& replies);

// Says why each rank of `view` without an answer gave none: on one of `localHosts`, dead (its
// process is gone) or alive but silent (with what asking it met, from `replies`); elsewhere,
// not asked, unless an unreached entry already said why (groupByCommunicator).
void explainSilentRanks(const std::vector<StatusReply>& replies, const std::set<std::string>& localHosts,
                        CommunicatorView* view);

// True when process `pid` of this host has exited (gone, or a zombie not yet reaped:
// transport/peer_process.h).
bool processGone(int pid);

}  // namespace weft
