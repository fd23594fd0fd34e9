// All-to-all schedules (ncclAlltoAll): block j of rank r's send buffer (`count` elements) ends
// as block r of rank j's recv buffer.
//
// In place (sendbuff == recvbuff) is supported by staging the input in Scratch first; with
// `inPlace` set the schedules name only Recv and Scratch.
#pragma once

#include <cstddef>

#include "algorithms/schedule.h"

namespace weft {

struct AllToAllParams {
  size_t count = 0;        // elements per block (per peer)
  size_t elementSize = 0;  // bytes per element
  int rank = 0;
  int nranks = 1;
  bool inPlace = false;  // sendbuff == recvbuff
};

// Pairwise exchange: step k = 1..n-1 sends to (r+k)%n and receives from (r-k)%n; the own block
// is a local copy.
Schedule buildPairwiseAllToAll(const AllToAllParams& params);

// Bruck: rotate, ceil(log2 n) rounds that each move the blocks whose index has bit k set to
// rank r+k (packed into one message), rotate back. Few messages of ~n/2 blocks: small messages.
Schedule buildBruckAllToAll(const AllToAllParams& params);

}  // namespace weft
