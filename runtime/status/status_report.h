// What a process tells `weft-info status` about each of its communicators, and the text that
// carries it between them: one tab-separated line per fact, so that a reply is read without a
// parser library and a host name or a collective's name (neither holds a tab) need no quoting.
//
//   comm     ID RANK NRANKS HOST PID ISSUED COMPLETED
//   inflight SEQUENCE NAME SECONDS                       (absent when idle)
//   wait     SEQUENCE STEP STEPKIND PEER SLICE SLICES SECONDS   (absent unless stuck)
//   last     SEQUENCE NAME SECONDS_AGO FAILED            (absent before the first)
//   member   RANK HOST PID                               (one per rank: the bootstrap table)
//   stat     KIND BUCKET COUNT BYTES NS                  (--stats only)
//   dump     PATH                                        (a dump asked for: where it goes)
//   unreached ID RANK NRANKS REASON                      (a rank another host's process could not ask)
//   end
//
// Times are durations measured by the answering process when it answered, so processes need
// no common clock.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace weft {

struct RankStatus {
  std::string commId;  // communicatorIdText (collective_record.h)
  int rank = -1, nranks = 0;
  std::string host;
  int pid = 0;
  uint64_t issued = 0, completed = 0;

  bool inFlight = false;
  uint64_t inFlightSequence = 0;
  std::string inFlightName;
  double inFlightSeconds = 0;

  bool waiting = false;
  uint64_t waitSequence = 0;
  uint32_t waitStep = 0, waitSlice = 0, waitSlices = 0;
  std::string waitStepKind;
  int waitPeer = -1;
  double waitSeconds = 0;

  bool anyCompleted = false;
  uint64_t lastSequence = 0;
  std::string lastName;
  double lastAgoSeconds = 0;
  bool lastFailed = false;

  struct Member {
    int rank = -1;
    std::string host;
    int pid = 0;
  };
  std::vector<Member> members;  // every rank of the communicator, by rank

  struct Stat {
    int kind = 0, bucket = 0;  // CollectiveMetrics' kind and size bucket (size <= 2^bucket)
    uint64_t count = 0, bytes = 0;
    int64_t ns = 0;
  };
  std::vector<Stat> stats;

  std::string dumpPath;  // where a dump that was asked for will be written

  // Not empty: no answer came from this rank (only commId, rank and nranks are set); why.
  std::string unreachedReason;
};

// A RankInfo host name up to its first ':' (hostIdentity adds the boot id and namespaces).
std::string shortHostName(const std::string& host);

std::string encodeStatus(const std::vector<RankStatus>& communicators);
// False, with *error saying which line, for text that is not a whole reply.
bool decodeStatus(const std::string& text, std::vector<RankStatus>* communicators, std::string* error);

}  // namespace weft
