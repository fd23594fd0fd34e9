// Every rank's place and every host's hardware, from the topology model (topology/), gathered
// on rank 0 as JSON text for weft-characterize's document. The report compares the hosts.
#pragma once

#include <string>
#include <vector>

#include "tools/characterize/rank_exchange.h"

namespace weft::characterize {

// Where a rank runs, as the link classes of the point-to-point matrix need it.
struct RankSite {
  std::string hostId;  // hostIdentity(): ranks with the same id share memory
  std::string host;    // its readable part (the host name, or WEFT_HOSTNAME)
  int numaNode = -1;   // -1: the binding spans several nodes
  int package = -1;
};

struct HostSurvey {
  std::vector<RankSite> sites;  // by rank (every rank has them)
  std::string ranksJson;        // rank 0: the document's "ranks" array
  std::string hostsJson;        // rank 0: the document's "hosts" array, one entry per host
};

// Collective over the world communicator.
HostSurvey surveyHosts(RankExchange* exchange);

// "same_numa", "same_socket", "across_sockets", "same_host" (a binding that spans NUMA nodes
// on a host that has several) or "across_hosts".
std::string linkClass(const RankSite& a, const RankSite& b);

}  // namespace weft::characterize
