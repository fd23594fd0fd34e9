// Recursive doubling all-reduce: at step k every rank swaps its whole partial result with the
// partner at distance 2^k and reduces the two. log2(p) exchanges of the whole buffer, against
// the 2*(n-1) or 2*log2(p) exchanges of pieces of the ring and of halving-doubling: the fewest
// latencies, for small messages (what Open MPI runs below its small-message threshold).
//
// Partners reduce the same two values in opposite order; the operators are commutative in
// IEEE arithmetic, and every level combines the same groups on every rank, so every rank ends
// with the same bits.
//
// Non-powers of two: the fold of power_of_two_fold.h (an even position of the first 2r hands
// its input to the odd one after it, sits out, and gets the result back).
//
// Cost: log2(p)*(alpha + S/B), plus 2*(alpha + S/B) when n is not a power of two.
#pragma once

#include <cstddef>
#include <vector>

#include "algorithms/schedule.h"

namespace weft {

struct DoublingAllReduceParams {
  size_t count = 0;        // elements
  size_t elementSize = 0;  // bytes per element
  int rank = 0;            // this rank's position is found in order
  std::vector<int> order;  // positions -> ranks (a permutation of 0..n-1)
  bool average = false;    // every acting rank divides the result once, before handing it back
};

Schedule buildDoublingAllReduce(const DoublingAllReduceParams& params);

}  // namespace weft
