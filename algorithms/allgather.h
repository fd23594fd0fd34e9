// All-gather schedules (ncclAllGather): every rank contributes `count` elements and ends with
// the concatenation of all contributions, rank r's block at recv[r*count, (r+1)*count).
//
// In place means sendbuff == recvbuff + rank*count (NCCL's rule). With `inPlace` set the
// schedules name only the Recv buffer, so the executor's hazard analysis sees the aliasing
// exactly: run them with prepareSchedule(..., sendAliasesRecv = false, ...).
#pragma once

#include <cstddef>
#include <vector>

#include "algorithms/schedule.h"

namespace weft {

struct AllGatherParams {
  size_t count = 0;            // elements per rank (the send count)
  size_t elementSize = 0;      // bytes per element
  int rank = 0;
  int nranks = 1;              // used when ringOrder is empty
  std::vector<int> ringOrder;  // ring only: ranks in ring order; empty = 0, 1, ..., nranks-1
  bool inPlace = false;        // sendbuff == recvbuff + rank*count
};

// Ring: n-1 steps, each rank forwards the block it received in the previous step.
Schedule buildRingAllGather(const AllGatherParams& params);

// Bruck: ceil(log2 n) rounds of doubling exchanges through Scratch (n*count elements), then one
// rotation into Recv. Fewer messages than the ring: for small messages.
Schedule buildBruckAllGather(const AllGatherParams& params);

}  // namespace weft
