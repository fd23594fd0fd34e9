// Blocks laid out by rank (rank r's block at r * blockBytes) visited by position in an order
// (a permutation of ranks, e.g. the ring order): consecutive positions whose ranks are also
// consecutive form one run, so one message or copy moves them. With the identity order every
// position range is a single run.
#pragma once

#include <vector>

namespace weft {

// Calls visit(firstRank, rankCount) for each run of positions [first, last] of `order`.
template <typename Visit>
void forEachRankRun(const std::vector<int>& order, int first, int last, Visit visit) {
  int q = first;
  while (q <= last) {
    int length = 1;
    while (q + length <= last && order[q + length] == order[q] + length) ++length;
    visit(order[q], length);
    q += length;
  }
}

}  // namespace weft
