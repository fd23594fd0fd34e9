// Gather and scatter (ncclGather, ncclScatter), linear: the root exchanges one block of `count`
// elements with every other rank directly and copies its own block locally.
//
// In place, as NCCL defines it at the root: gather when sendbuff == recvbuff + root*count,
// scatter when recvbuff == sendbuff + root*count. With `inPlace` set the root's schedule skips
// the local copy and names only the buffer that holds all blocks, so the executor's hazard
// analysis is exact: run it with prepareSchedule(..., sendAliasesRecv = false, ...).
#pragma once

#include <cstddef>

#include "algorithms/schedule.h"

namespace weft {

struct GatherScatterParams {
  size_t count = 0;        // elements per rank
  size_t elementSize = 0;  // bytes per element
  int rank = 0;
  int nranks = 1;
  int root = 0;
  bool inPlace = false;  // meaningful at the root only
};

// Gather: every rank's send buffer (count elements) lands in block `rank` of the root's recv.
Schedule buildLinearGather(const GatherScatterParams& params);

// Scatter: block q of the root's send buffer lands in rank q's recv buffer (count elements).
Schedule buildLinearScatter(const GatherScatterParams& params);

}  // namespace weft
