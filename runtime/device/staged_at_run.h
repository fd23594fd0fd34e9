// A device call left unstaged for the direct path (CollectiveCall::deviceBuffers) runs on
// host memory after all when the ranks cannot all read each other's buffers: the progress
// thread copies its input into the staging place the batch reserved for it, on its own stream
// (the caller's stream waits on the batch's flag meanwhile), and copies the result back after
// the batch ran (StreamQueue::runBatch).
#pragma once

#include "nccl.h"
#include "runtime/exec/collective.h"
#include "runtime/exec/executor.h"

namespace weft {

// The communicator's device work stream (runtime/device/stream_queue.h); only on its progress
// thread, for a call of a stream-ordered batch.
ncclResult_t deviceWorkOf(ncclComm* comm, const DeviceWork** out);

// Copies the call's input into its staging place and points `buffers` at the staging places.
ncclResult_t stageAtRun(const CollectiveCall& call, RunBuffers* buffers);

// The copies between a call's buffers and a contiguous place it runs on instead (its staging
// places, the own device buffers), queued on the work stream. A strided buffer of nranks blocks
// (CollectiveCall::blockStride: a reduce-scatter's or scatter's input, an all-gather's or gather's
// output, both of an all-to-all) moves its blocks in one 2-D copy; the place holds them back to
// back, as contiguousView(call) runs them.
ncclResult_t copyInputToContiguous(const DeviceWork& work, const CollectiveCall& call, char* place);
ncclResult_t copyResultFromContiguous(const DeviceWork& work, const CollectiveCall& call, const char* place);

}  // namespace weft
