// ncclGroupStart/ncclGroupEnd: per-thread nesting depth and the operations queued until the
// outermost ncclGroupEnd, which runs them together (initializations first, concurrently; then
// collectives, every communicator progressing at once).
#pragma once

#include <functional>

#include "runtime/exec/collective.h"

namespace weft {

bool groupActive();
ncclResult_t groupStart();
ncclResult_t groupEnd();
// Ends the group like groupEnd, but only predicts the queued collectives' time (microseconds,
// from the cost model) instead of running them.
ncclResult_t groupSimulateEnd(ncclSimInfo_t* simInfo);
void groupEnqueueCollective(const CollectiveCall& call);
// A deferred communicator initialization (ncclCommInitRank inside a group).
void groupEnqueueInit(std::function<ncclResult_t()> init);

// Runs `call` now, or queues it when a group is open.
ncclResult_t submitCollective(const CollectiveCall& call);

}  // namespace weft
