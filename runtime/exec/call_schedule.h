// From a call to its schedule: NCCL's in-place rules for each collective, the algorithm for
// it, and the builder's parameters. Point-to-point calls of one group become one schedule.
#pragma once

#include <string>
#include <vector>

#include "algorithms/builders/point_to_point.h"
#include "algorithms/cost/cost_model.h"
#include "algorithms/schedule.h"
#include "runtime/exec/collective.h"
#include "runtime/exec/executor.h"

namespace weft {

// In place as NCCL defines it for the call's kind (same pointer, or the rank's block of the
// larger buffer for all-gather, reduce-scatter, gather and scatter).
bool callIsInPlace(const CollectiveCall& call);
// A strided slice or piece (CollectiveCall::blockStride) as it runs where its strided buffer's
// blocks were copied into one contiguous place (staging, the own device buffers): no stride, and
// in place where the call is. Its buffer pointers serve the plan's key only (the run's are in
// RunBuffers); never copy through them. Any other call: itself.
CollectiveCall contiguousView(const CollectiveCall& call);
// True when the schedule names BufferKind::Send for memory that is also Recv (same pointer): an
// all-reduce, broadcast or reduce in place. The others' builders handle in place themselves
// (block offsets; an all-to-all in place names only Recv and Scratch).
bool sendAliasesRecv(const CollectiveCall& call);

// The collective and size (as nccl-tests counts it) the cost model sees for `call`.
Collective costCollective(const CollectiveCall& call);
size_t costBytes(const CollectiveCall& call);

// The algorithm the cost model picks for `call` (NCCL_ALGO / WEFT_ALGO override it; an unknown
// name is an error listing the valid ones). Not for send/recv.
ncclResult_t selectForCall(const CollectiveCall& call, Algorithm* out);

// The schedule of `selected` (from selectForCall, or Direct when the direct path's handshake
// found every peer's buffers mapped) for one collective.
Schedule scheduleForCall(const CollectiveCall& call, Algorithm selected, const char** algorithm);

// A group's sends and receives on one communicator, each at its caller's address and size.
PointToPointParams pointToPointParamsOf(const std::vector<const CollectiveCall*>& calls);
// The prepared plan of one schedule for them. Steps address memory directly: ranges are
// absolute addresses over null Send/Recv bases (RunBuffers{}).
ncclResult_t preparePointToPoint(const PointToPointParams& params, size_t sliceBytes, PreparedSchedule* out);

}  // namespace weft
