// Broadcast schedules (ncclBroadcast): the root's `count` elements end in every rank's recv
// buffer. The root copies its send buffer to its recv buffer unless they are the same memory
// (in place; the executor skips a Copy whose source and destination addresses are equal).
#pragma once

#include <cstddef>
#include <vector>

#include "algorithms/schedule.h"

namespace weft {

struct BroadcastParams {
  size_t count = 0;        // elements
  size_t elementSize = 0;  // bytes per element
  int rank = 0;
  int nranks = 1;  // used when ringOrder is empty
  int root = 0;
  std::vector<int> ringOrder;  // chain only: the chain follows the ring from the root; empty = 0..n-1
};

// Pipelined chain root -> next -> ... : one Recv and one Send per rank; the executor's slices
// pipeline it (a rank forwards slice k while slice k+1 is still arriving).
Schedule buildChainBroadcast(const BroadcastParams& params);

// Binomial tree rooted at `root`: ceil(log2 n) rounds, the larger subtrees served first.
Schedule buildBinomialBroadcast(const BroadcastParams& params);

}  // namespace weft
