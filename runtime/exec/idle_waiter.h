// What a rank does when its collectives cannot move: spin a little (the peer is usually a
// microsecond away; skipped when ranks outnumber cores), then sleep on the shared-memory
// doorbell or the sockets until a peer makes room or sends. While waiting it enforces WEFT_TIMEOUT, notices
// aborts and dead peers, and says what it was waiting for when it gives up.
#pragma once

#include <chrono>
#include <functional>
#include <vector>

#include "common/deadline.h"
#include "nccl.h"
#include "runtime/exec/executor.h"

namespace weft {

class IdleWaiter {
 public:
  explicit IdleWaiter(double timeoutSeconds);
  // Progress was made: start the idle sequence and the time-out over.
  void madeProgress();
  // Nothing moved. `tryProgress` re-runs the runs once more after the sleeper flag is raised
  // (returns true if something moved). Returns an error on time-out, abort or a dead peer.
  ncclResult_t idle(const std::vector<CollectiveRun*>& active, const std::vector<ncclComm*>& comms,
                    const std::function<ncclResult_t(bool*)>& tryProgress);
  // Whether the last idle() failed because WEFT_TIMEOUT passed without progress.
  bool timedOut() const { return timedOut_; }
  // Whether the last idle() was past spinning (the rank is really stuck, for now), and since
  // when (steady_clock ns) nothing has moved: what the live status reports.
  bool pastSpin() const { return pastSpin_; }
  int64_t idleSinceNs() const;

 private:
  ncclResult_t checkHealth(const std::vector<CollectiveRun*>& active, const std::vector<ncclComm*>& comms);

  double timeoutSeconds_;
  Deadline deadline_;
  unsigned idleRounds_ = 0;
  std::chrono::steady_clock::time_point idleSince_;
  bool spin_ = true;
  bool pastSpin_ = false;
  bool timedOut_ = false;
};

}  // namespace weft
