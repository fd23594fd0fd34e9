// What a rank does when its collectives cannot move: spin a little (the peer is usually a
// microsecond away; skipped when ranks outnumber cores), yield the core a little longer, then
// sleep on the shared-memory doorbell or the sockets until a peer makes room or sends. While waiting it enforces
// WEFT_TIMEOUT, notices aborts and dead peers, and says what it was waiting for when it gives up.
#pragma once

#include <chrono>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "common/deadline.h"
#include "nccl.h"
#include "runtime/exec/executor.h"

namespace weft {

class IdleWaiter {
 public:
  // The time-out is the least of the communicators' (communicatorTimeout), read only once a wait
  // outlasts the spin: a call that never waits that long reads no setting.
  explicit IdleWaiter(std::span<ncclComm* const> comms) : comms_(comms) {}
  // Progress was made: start the idle sequence and the time-out over.
  void madeProgress();
  // Nothing moved. `tryProgress` re-runs the runs once more after the sleeper flag is raised
  // (returns true if something moved). Returns an error on time-out, abort or a dead peer.
  ncclResult_t idle(const std::vector<CollectiveRun*>& active, const std::function<ncclResult_t(bool*)>& tryProgress);
  // The same for a wait on one peer's message through shared memory (the one-shot collectives):
  // `describe` says what is awaited, for the time-out's error.
  ncclResult_t idleOn(Connection* peer, const std::function<std::string()>& describe,
                      const std::function<ncclResult_t(bool*)>& tryProgress);
  // Whether the last idle() failed because WEFT_TIMEOUT passed without progress.
  bool timedOut() const { return timedOut_; }
  // Whether the last idle() was past spinning and yielding (the rank is really stuck, for now), and since
  // when (steady_clock ns) nothing has moved: what the live status reports.
  bool pastSpin() const { return pastSpin_; }
  int64_t idleSinceNs() const;

 private:
  // Starts a new wait on its first round; true while it should still spin or yield (one round
  // of either done: `pausesPerLook` pauses, or one yield).
  bool busyWaiting(int pausesPerLook);
  ncclResult_t checkAborted() const;  // or revoked
  // WEFT_TIMEOUT; `describe` names the wait in the time-out's error.
  ncclResult_t checkDeadline(const std::function<std::string()>& describe);
  // Sleeps on the communicator's doorbell (or briefly) unless `tryProgress` moves after arming it.
  ncclResult_t sleepOnDoorbell(const std::function<ncclResult_t(bool*)>& tryProgress);

  std::span<ncclComm* const> comms_;  // the caller's, outliving the waiter
  double timeoutSeconds_ = 0;
  Deadline deadline_;
  bool deadlineSet_ = false;
  unsigned idleRounds_ = 0;
  std::chrono::steady_clock::time_point idleSince_;
  bool spin_ = true;
  bool pastSpin_ = false;
  bool timedOut_ = false;
};

}  // namespace weft
