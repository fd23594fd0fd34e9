// From the answers of a communicator's ranks to the one line a user of a stuck job wants:
// which rank is holding the others up, and in what.
//
//   rank 2 (host b, pid 4242) has not issued AllReduce #1042 (its last, #1041, ended 12.0 s ago);
//   ranks 0-1 and 3 wait on rank 2
//   rank 3 (host b, pid 4243) is at AllReduce #1042 step 5 (recv from rank 7); ranks 0-2 and 4-7 wait on rank 3
//   rank 5 (host c, pid 977) is dead (its process is gone); ranks 0-4 have waited on it for 31.2 s
//
// The rule: a rank that is dead or silent comes first; then, unless every collective in flight
// started less than a second ago (the job is moving), the rank furthest behind (fewest
// collectives issued); when every rank issued as many, the rank most others wait on.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/status/status_report.h"

namespace weft {

// One communicator as the asker saw it.
struct CommunicatorView {
  std::string commId;
  int nranks = 0;
  std::vector<std::optional<RankStatus>> ranks;  // by rank; empty where no answer came
  std::vector<RankStatus::Member> members;       // by rank, from whichever answer had them
  std::vector<std::string> silence;              // by rank, for a missing answer: why ("its process is gone")
  std::vector<bool> dead;                        // by rank: the process is known to be gone
  std::vector<bool> unasked;                     // by rank: out of reach (another host), not silent
};

// The answers grouped by communicator id (first seen first), ranks placed by number.
std::vector<CommunicatorView> groupByCommunicator(const std::vector<RankStatus>& answers);

// "rank 2 (host b, pid 4242)".
std::string rankName(const CommunicatorView& view, int rank);
// "ranks 0-2 and 4-7", "rank 3".
std::string ranksText(const std::vector<int>& ranks);
// What one rank is doing: "in AllReduce #5 for 3.1 s, step 0 (recv from rank 2) for 3.1 s".
std::string rankActivity(const RankStatus& status);
// A rank's line after its name: what it is doing (and where its record dump goes, when one was
// asked for), or why it did not answer ("dead: its process is gone").
std::string rankSummary(const CommunicatorView& view, int rank);
// The culprit line.
std::string diagnose(const CommunicatorView& view);

}  // namespace weft
