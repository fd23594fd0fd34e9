// Reduce-scatter schedules (ncclReduceScatter): the send buffer holds nranks blocks of
// `recvCount` elements; rank r ends with the reduction over ranks of block r in its recv buffer.
//
// In place means recvbuff == sendbuff + rank*recvCount (NCCL's rule). With `inPlace` set the
// schedule names the aliased block only as Recv[0, block), so the executor's hazard analysis
// sees the aliasing exactly: run it with prepareSchedule(..., sendAliasesRecv = false, ...).
#pragma once

#include <cstddef>
#include <vector>

#include "algorithms/schedule.h"

namespace weft {

struct ReduceScatterParams {
  size_t recvCount = 0;    // elements per rank (NCCL's recvcount)
  size_t elementSize = 0;  // bytes per element
  int rank = 0;
  int nranks = 1;                            // used when ringOrder is empty
  std::vector<int> ringOrder;                // ranks in ring order; empty = 0, 1, ..., nranks-1
  bool average = false;                      // ncclAvg: end with a Divide by nranks (schedule.divisor)
  bool preScale = false;                     // PreMulSum: each local block is Scaled before it is reduced
  bool inPlace = false;                      // recvbuff == sendbuff + rank*recvCount
  std::vector<std::vector<int>> nodes = {};  // hierarchical, and the ring's channels: RankLayout::nodes
  int channels = 1;                          // ring only: every block cut in `channels` parts, each part around its
                                             // own ring (algorithms/builders/channels.h), all parts side by side
};

// Ring: partial sums travel n-1 hops through two Scratch slots; the last hop reduces into Recv.
Schedule buildRingReduceScatter(const ReduceScatterParams& params);

// Recursive halving over the ring order's positions: the input is copied into Scratch by
// position, then ceil(log2 n) exchanges whose size halves (partner at distance pw/2 first, each
// keeps and reduces the half of the range its group owns). Other rank counts fold the first
// 2(n - pw) positions in pairs (algorithms/builders/power_of_two_fold.h): the sitting-out rank hands its
// whole input over first and receives its reduced block at the end.
Schedule buildRecursiveHalvingReduceScatter(const ReduceScatterParams& params);

// Hierarchical (nodes of equal size L, N nodes), the dual of the hierarchical all-gather: the
// input is copied into Scratch rail-major, (1) a ring reduce-scatter inside the node over whole
// rails (N blocks a message) leaves local rank l with the node's sum of rail l, (2) a ring
// reduce-scatter along rail l reduces across nodes. Only N-1 blocks per rank cross the network.
// Uneven nodes, one node or one rank per node: the ring over the ranks in node order.
Schedule buildHierarchicalReduceScatter(const ReduceScatterParams& params);

}  // namespace weft
