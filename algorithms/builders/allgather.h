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
  size_t count = 0;        // elements per rank (the send count)
  size_t elementSize = 0;  // bytes per element
  int rank = 0;
  int nranks = 1;                            // used when ringOrder is empty
  std::vector<int> ringOrder;                // ring and recursive doubling: ranks in ring order; empty = 0..nranks-1
  bool inPlace = false;                      // sendbuff == recvbuff + rank*count
  std::vector<std::vector<int>> nodes = {};  // hierarchical, and the ring's channels: RankLayout::nodes
  int channels = 1;                          // ring only: every block cut in `channels` parts, each part around its
                                             // own ring (algorithms/builders/channels.h), all parts side by side
};

// Ring: n-1 steps, each rank forwards the block it received in the previous step.
Schedule buildRingAllGather(const AllGatherParams& params);

// Bruck: ceil(log2 n) rounds of doubling exchanges through Scratch (n*count elements), then one
// rotation into Recv. Fewer messages than the ring: for small messages.
Schedule buildBruckAllGather(const AllGatherParams& params);

// Recursive doubling over the ring order's positions: ceil(log2 n) exchanges whose size doubles
// (the partner at distance 1, 2, 4, ... sends everything its group has), no staging copy. Other
// rank counts fold the first 2(n - pw) positions in pairs (algorithms/builders/power_of_two_fold.h): the
// sitting-out rank hands its block over first and receives all the others at the end.
Schedule buildRecursiveDoublingAllGather(const AllGatherParams& params);

// Hierarchical (nodes of equal size L, N nodes): (1) a ring along the rail (the ranks with the
// same local rank l on every node) gathers the rail's N blocks, (2) a ring inside the node
// exchanges whole rails, N blocks a message, (3) the rails are copied into place. Only N-1
// blocks per rank cross the network, every rank using its own NIC. Staged in Scratch (n blocks,
// rail-major) so that each message is contiguous. Uneven nodes, one node or one rank per node:
// the ring over the ranks in node order.
Schedule buildHierarchicalAllGather(const AllGatherParams& params);

}  // namespace weft
