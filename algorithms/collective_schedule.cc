#include "algorithms/collective_schedule.h"

#include <utility>

#include "algorithms/algorithm_registry.h"
#include "algorithms/builders/strided_blocks.h"

namespace weft {

Schedule buildCollectiveSchedule(Algorithm algorithm, const CollectiveShape& s, Algorithm* ran) {
  const CollectiveAlgorithm* row = findCollectiveAlgorithm(s.collective, algorithm);
  // A strided slice or piece may run direct: withStridedBlocks moves this rank's ranges, and the
  // direct path moves its mapping of each peer's strided buffer (runtime/exec/direct_path.cc),
  // since every range of the direct all-gather and reduce-scatter lies inside one block.
  if (!row || (s.preScale && row->ignoresPreScale))
    row = findCollectiveAlgorithm(s.collective, defaultAlgorithm(s.collective));
  if (ran) *ran = row ? row->algorithm : defaultAlgorithm(s.collective);
  if (!row) return {};  // not a collective
  Schedule schedule = row->build(s, orderOrIdentity(s.order, s.nranks));
  if (!s.blockStride) return schedule;
  const size_t block = s.count * s.elementSize, stride = s.blockStride * s.elementSize;
  switch (s.collective) {
    case Collective::AllGather:
      return withStridedBlocks(std::move(schedule), BufferKind::Recv, block, stride, s.nranks);
    case Collective::ReduceScatter:
      return withStridedBlocks(std::move(schedule), BufferKind::Send, block, stride, s.nranks);
    case Collective::AllToAll:  // both buffers strided
      return withStridedBlocks(withStridedBlocks(std::move(schedule), BufferKind::Send, block, stride, s.nranks),
                               BufferKind::Recv, block, stride, s.nranks);
    default: return schedule;
  }
}

Schedule buildAllReduceSchedule(Algorithm algorithm, const AllReduceShape& s) {
  return buildCollectiveSchedule(algorithm, {.collective = Collective::AllReduce,
                                             .count = s.count,
                                             .elementSize = s.elementSize,
                                             .rank = s.rank,
                                             .nranks = s.nranks,
                                             .order = s.order,
                                             .nodes = s.nodes,
                                             .average = s.average,
                                             .channels = s.channels,
                                             .pieceChunkBytes = s.pieceChunkBytes});
}

}  // namespace weft
