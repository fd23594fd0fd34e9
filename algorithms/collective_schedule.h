// From (collective, algorithm, call shape) to the builder that makes this rank's schedule: the
// one dispatch the runtime, weft-info and the tests share.
#pragma once

#include <cstddef>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/schedule.h"

namespace weft {

struct CollectiveShape {
  Collective collective = Collective::AllReduce;
  size_t count = 0;  // the NCCL call's count: per rank for all-gather (send), reduce-scatter
                     // (recv), all-to-all, gather and scatter (per peer); the buffer otherwise
  size_t elementSize = 0;
  int rank = 0;
  int nranks = 1;
  int root = 0;                         // broadcast, reduce, gather, scatter
  std::vector<int> order;               // the ring order (RankLayout::ringOrder); empty: 0..n-1
  std::vector<std::vector<int>> nodes;  // RankLayout::nodes; empty: one node
  bool average = false;                 // ncclAvg
  bool preScale = false;                // PreMulSum
  bool inPlace = false;                 // NCCL's in-place layout for the collective
  int channels = 1;                     // ring channels (CostModel::ringChannels); only the
                                        // all-reduce, all-gather and reduce-scatter rings use it
  size_t pieceChunkBytes = 0;           // the ring all-reduce's pieces (RingAllReduceParams); 0: none
  // A buffer of nranks blocks (an all-gather's receive, a reduce-scatter's send, both of an
  // all-to-all, the root's of a gather or scatter): elements from one rank's block to the next,
  // when not `count` (algorithms/builders/strided_blocks.h); 0: count.
  size_t blockStride = 0;
};

// The schedule of `algorithm` for `shape`, built by the algorithm's row in the registry
// (algorithms/algorithm_registry.h); an algorithm the collective does not have falls back to its
// default (ring, pairwise, linear), and so does a PreMulSum call of an algorithm that cannot scale
// its inputs (of the all-reduces only the ring can). `ran`, when given, receives the algorithm
// built.
Schedule buildCollectiveSchedule(Algorithm algorithm, const CollectiveShape& shape, Algorithm* ran = nullptr);

// The all-reduce case (what the simulator-based tools use).
struct AllReduceShape {
  size_t count = 0;
  size_t elementSize = 0;
  int rank = 0;
  int nranks = 1;
  std::vector<int> order;               // ring / tree / rhd order (RankLayout::ringOrder); empty: 0..n-1
  std::vector<std::vector<int>> nodes;  // RankLayout::nodes; empty: one node
  bool average = false;
  int channels = 1;            // ring channels (CostModel::ringChannels)
  size_t pieceChunkBytes = 0;  // the ring's pieces (RingAllReduceParams); 0: none
};
Schedule buildAllReduceSchedule(Algorithm algorithm, const AllReduceShape& shape);

}  // namespace weft
