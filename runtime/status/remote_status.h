// Status across hosts. Besides its Unix socket (this host only), the status server listens on
// TCP for each communicator, at the communicator's data address (the interface its ranks talk
// over), and the port travels in the bootstrap table (RankInfo::statusPort). A process asked
// for a job's status on its host asks the communicator's ranks on other hosts through it.
//
// The exchange, bounded by a deadline on both sides: the server sends a fresh nonce; the asker
// sends the request's length (u32), the request ("status ID", "status stats ID", "dump ID", or
// "time ID": the server's wall clock in ns, a line, for the trace's clock offsets)
// and an HMAC-SHA-256 over the nonce and the request, keyed from the communicator's key, which
// only its ranks hold; the server checks it, answers with that communicator's status
// (status_report.h) and closes. A stranger learns nothing; a recorded request is worthless on
// a new connection. The answer itself is not encrypted (host names, pids, collective names),
// so under WEFT_ENCRYPTION=tls there is no TCP endpoint (docs/security.md).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/message_auth.h"
#include "common/socket.h"
#include "runtime/status/status_report.h"

struct ncclComm;

namespace weft {

// What asking a communicator's ranks on other hosts needs, copied out of the communicator so
// that the asking can run without holding it.
struct RemoteStatusTargets {
  std::string commId;
  int nranks = 0;
  MacKey key{};
  struct Target {
    int rank;
    std::string host;
    int pid;
    SocketAddress address;  // port 0: the rank has no endpoint
  };
  std::vector<Target> targets;  // the ranks on other hosts than this one's
};
RemoteStatusTargets remoteStatusTargetsOf(ncclComm* comm);
// The key status requests are signed with (derived from the communicator's key).
MacKey statusRequestKey(ncclComm* comm);

// Asks every target `kind` ("status", "status stats" or "dump"), all at once, within
// `timeoutSeconds`; a target that does not answer comes back as an unreached entry.
std::vector<RankStatus> askRemoteRanks(const RemoteStatusTargets& targets, const std::string& kind,
                                       double timeoutSeconds);

// How far communicator rank 0's wall clock is ahead of this process's (ns), for WEFT_TRACE: the
// best of `probes` "time" requests to rank 0's endpoint (the one with the shortest round trip;
// the error is at most half of it, in *roundTripNs). 0, with no round trip, when rank 0 shares
// this host (one clock) or cannot be asked.
int64_t clockOffsetToRankZero(ncclComm* comm, int probes, int64_t* roundTripNs);

// The server's side of one accepted connection on communicator `commId`'s endpoint: checks the
// request against `key`, then sends answer(kind). Strangers are dropped without an answer.
void serveRemoteRequest(int fd, const MacKey& key, const std::string& commId, double timeoutSeconds,
                        const std::function<std::string(const std::string& kind)>& answer);

}  // namespace weft
