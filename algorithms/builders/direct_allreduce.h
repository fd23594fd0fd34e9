// Direct all-reduce for ranks that can read each other's buffers (one host, buffers from
// ncclMemAlloc): rank r sums chunk r straight out of every rank's send buffer into its own
// receive buffer, then copies every other chunk straight out of its owner's receive buffer.
// No bounce buffer: each byte is read once from each source and written once. Two barriers
// (Notify/WaitNotify to every peer) separate the phases and keep every rank's buffers
// untouched until all peers are done reading them.
#pragma once

#include <cstddef>

#include "algorithms/schedule.h"

namespace weft {

struct DirectAllReduceParams {
  size_t count = 0;
  size_t elementSize = 0;
  int rank = 0;
  int nranks = 1;
  bool average = false;
};

Schedule buildDirectAllReduce(const DirectAllReduceParams& params);

}  // namespace weft
