// Reduce schedules (ncclReduce): the reduction over ranks of every rank's `count` elements ends
// in the root's recv buffer. Non-root ranks accumulate partial results in Scratch and never
// touch their recv buffer (it may be NULL). In place (send == recv at the root) needs nothing
// special: the steps name Send and Recv at the same offsets.
#pragma once

#include <cstddef>
#include <vector>

#include "algorithms/schedule.h"

namespace weft {

struct ReduceParams {
  size_t count = 0;        // elements
  size_t elementSize = 0;  // bytes per element
  int rank = 0;
  int nranks = 1;  // used when ringOrder is empty
  int root = 0;
  std::vector<int> ringOrder;  // chain only: data flows along the ring toward the root; empty = 0..n-1
  bool average = false;        // ncclAvg: the root ends with a Divide by nranks (schedule.divisor)
  bool preScale = false;       // PreMulSum: the local input is Scaled (into Scratch or the root's
                               // Recv) before it is reduced; the send buffer is never written
};

// Chain: the rank farthest from the root along the ring sends its input; each rank on the way
// adds its own and forwards; the root adds last. Pipelined by the executor's slices.
Schedule buildChainReduce(const ReduceParams& params);

// Binomial tree toward the root: ceil(log2 n) rounds.
Schedule buildBinomialReduce(const ReduceParams& params);

}  // namespace weft
