// Where the calls of a group (or one lone call) run. Without a device API (no CUDA device and
// none installed for testing) every call is host memory and runs now, on the calling thread.
// Otherwise a communicator's calls that touch device memory are staged through pinned host
// memory and enqueued on their streams (stream_queue.h), returning at once as NCCL's do; the
// host-memory calls run now, after the device calls enqueued earlier on the same
// communicator have completed. First, on every rank alike, large calls between hosts are cut
// into slices (runtime/exec/staging_slices.h), each slice a batch of its own.
#pragma once

#include <vector>

#include "runtime/exec/collective.h"

namespace weft {

ncclResult_t dispatchCollectives(const std::vector<CollectiveCall>& calls);

// The device-memory work of `comm`, if it has any: waited for by ncclCommFinalize, woken by
// ncclCommAbort, stopped before ncclCommDestroy frees the communicator (false: a stream never
// released its batches within WEFT_TIMEOUT, and the communicator must be leaked).
ncclResult_t waitForStreamWork(ncclComm* comm);
void wakeStreamWork(ncclComm* comm);
bool stopStreamWork(ncclComm* comm);

}  // namespace weft
