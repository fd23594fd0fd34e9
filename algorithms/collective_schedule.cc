#include "algorithms/collective_schedule.h"

#include <cassert>
#include <utility>

#include "algorithms/algorithm_registry.h"
#include "algorithms/builders/strided_blocks.h"

namespace weft {

Schedule buildCollectiveSchedule(Algorithm algorithm, const CollectiveShape& s, Algorithm* ran) {
  const CollectiveAlgorithm* row = findCollectiveAlgorithm(s.collective, algorithm);
  // A strided slice or piece may run direct: withStridedBlocks moves this rank's ranges, and the
  // direct path moves its mapping of each peer's strided buffer (runtime/exec/direct_path.cc),
  // since every range of the direct all-gather, reduce-scatter, all-to-all, gather and scatter
  // lies inside one block.
  if (!row || (s.preScale && row->ignoresPreScale))
    row = findCollectiveAlgorithm(s.collective, defaultAlgorithm(s.collective));
  if (ran) *ran = row ? row->algorithm : defaultAlgorithm(s.collective);
  if (!row) return {};  // not a collective
  Schedule schedule = row->build(s, orderOrIdentity(s.order, s.nranks));
  if (!s.blockStride) return schedule;
  // A direct schedule's strided ranges must all lie inside one block (strided_blocks_test checks
  // every builder): its peers' ranges are not moved, so a Scratch copy would overwrite what
  // peers wrote.
  const size_t scratchBefore = schedule.scratchBytes;
  const size_t block = s.count * s.elementSize, stride = s.blockStride * s.elementSize;
  // (Off the root, a gather's or scatter's schedule has no such buffer: nothing moves.)
  if (sendHoldsRankBlocks(s.collective))
    schedule = withStridedBlocks(std::move(schedule), BufferKind::Send, block, stride, s.nranks);
  if (recvHoldsRankBlocks(s.collective))
    schedule = withStridedBlocks(std::move(schedule), BufferKind::Recv, block, stride, s.nranks);
  assert(row->algorithm != Algorithm::Direct || schedule.scratchBytes == scratchBefore);
  (void)scratchBefore;
  return schedule;
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
