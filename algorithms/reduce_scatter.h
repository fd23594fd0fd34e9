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
  size_t recvCount = 0;        // elements per rank (NCCL's recvcount)
  size_t elementSize = 0;      // bytes per element
  int rank = 0;
  int nranks = 1;              // used when ringOrder is empty
  std::vector<int> ringOrder;  // ranks in ring order; empty = 0, 1, ..., nranks-1
  bool average = false;        // ncclAvg: end with a Divide by nranks (schedule.divisor)
  bool preScale = false;       // PreMulSum: each local block is Scaled before it is reduced
  bool inPlace = false;        // recvbuff == sendbuff + rank*recvCount
};

// Ring: partial sums travel n-1 hops through two Scratch slots; the last hop reduces into Recv.
Schedule buildRingReduceScatter(const ReduceScatterParams& params);

}  // namespace weft
