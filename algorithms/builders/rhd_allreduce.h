// Recursive halving-doubling all-reduce (Rabenseifner): a reduce-scatter by recursive halving
// (at step k each rank exchanges half of what it still holds with the partner at distance 2^k
// and keeps the reduced other half), then an all-gather by recursive doubling in reverse.
// Distances grow from 1, so the large early exchanges stay between neighbours in `order`
// (usually the same node) and only small pieces cross far.
//
// Non-powers of two (the standard fix): with p = 2^floor(log2 n) and r = n - p, the first 2r
// positions pair up; each even one sends its whole input to the odd one after it and sits out,
// the p remaining ranks run the power-of-two algorithm, and each even one receives the final
// result from its partner at the end.
//
// Cost: 2*log2(p)*alpha + 2*(p-1)/p*S/B, plus 2*(alpha + S/B) when n is not a power of two.
#pragma once

#include <cstddef>
#include <vector>

#include "algorithms/schedule.h"

namespace weft {

struct RhdAllReduceParams {
  size_t count = 0;        // elements
  size_t elementSize = 0;  // bytes per element
  int rank = 0;            // this rank's position is found in order
  std::vector<int> order;  // positions -> ranks (a permutation of 0..n-1)
  bool average = false;    // each rank divides the piece it owns after the halving, once
};

Schedule buildRhdAllReduce(const RhdAllReduceParams& params);

}  // namespace weft
