// Ring all-reduce: a reduce-scatter around the ring (each rank receives a chunk from its
// predecessor, adds its own, forwards), then an all-gather of the reduced chunks. Every
// element is reduced exactly once per rank, and each rank moves 2(n-1)/n of the buffer.
#pragma once

#include <cstddef>
#include <vector>

#include "algorithms/schedule.h"

namespace weft {

struct RingAllReduceParams {
  size_t count = 0;            // elements
  size_t elementSize = 0;      // bytes per element
  int rank = 0;                // this rank's position is found in ringOrder
  std::vector<int> ringOrder;  // ranks in ring order (a permutation of 0..n-1)
  bool average = false;        // end with a Divide by n on the owned chunk
  bool preScale = false;       // PreMulSum: scale the whole input into Recv first and reduce from there
  // Channels (algorithms/builders/channels.h): the buffer is cut into `channels` parts, part c reduced
  // around channelRing(nodes, ringOrder, c); all parts run together. 1: one ring.
  int channels = 1;
  std::vector<std::vector<int>> nodes = {};  // RankLayout::nodes, for the channels' rings; may be empty
  // Pieces (algorithms/builders/pieces.h): each rank's chunk of one piece, in bytes; a larger
  // buffer is reduced in consecutive pieces of ringOrder.size() chunks, each a whole ring
  // all-reduce (per channel). 0: the whole buffer is one piece.
  size_t pieceChunkBytes = 0;
};

Schedule buildRingAllReduce(const RingAllReduceParams& params);

}  // namespace weft
