// Direct all-reduce for ranks that can read and write each other's buffers (one host, buffers
// from ncclMemAlloc): rank r sums chunk r straight out of every rank's send buffer and writes
// the result straight into every rank's receive buffer. Each rank reads the whole buffer once
// and writes it once, with no bounce buffer and no second phase; with two ranks the sum and
// both writes are one pass (Step::dst2). The call's entry handshake (runtime/exec/direct_path.h)
// is the barrier before: every peer has entered the call, so its buffers are ready. One barrier
// (Notify/WaitNotify to every peer) after keeps every rank's buffers until all peers are done.
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
