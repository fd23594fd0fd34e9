#include "algorithms/builders/ring_allreduce.h"

#include <algorithm>

#include "algorithms/builders/channels.h"
#include "algorithms/builders/pieces.h"
#include "algorithms/builders/split_evenly.h"

namespace weft {

Schedule buildRingAllReduce(const RingAllReduceParams& p) {
  if (p.channels > 1 && p.count > 1 && p.ringOrder.size() > 1)
    return buildOnChannels(p.channels, p.count, p.nodes, p.ringOrder, p.elementSize, true,
                           [&](const std::vector<int>& channelRing, size_t, size_t elements) {
                             RingAllReduceParams part = p;
                             part.count = elements;
                             part.channels = 1;
                             part.ringOrder = channelRing;
                             return buildRingAllReduce(part);
                           });
  if (p.ringOrder.size() > 1 && p.pieceChunkBytes)
    return buildInPieces(p.count, p.pieceChunkBytes / p.elementSize * p.ringOrder.size(), p.elementSize,
                         [&](size_t elements) {
                           RingAllReduceParams piece = p;
                           piece.count = elements;
                           piece.pieceChunkBytes = 0;
                           return buildRingAllReduce(piece);
                         });
  Schedule schedule;
  const int n = static_cast<int>(p.ringOrder.size());
  schedule.divisor = static_cast<uint64_t>(n);
  const int position =
      static_cast<int>(std::find(p.ringOrder.begin(), p.ringOrder.end(), p.rank) - p.ringOrder.begin());
  auto chunkRange = [&](BufferKind buffer, int chunk) {
    ElementSpan span = splitEvenly(p.count, n, ((chunk % n) + n) % n);
    return BufferRange{buffer, span.begin * p.elementSize, (span.end - span.begin) * p.elementSize};
  };
  auto whole = [&](BufferKind buffer) { return BufferRange{buffer, 0, p.count * p.elementSize}; };

  // The local input: the user's send buffer, or its scaled copy in Recv (the send buffer is
  // never written).
  BufferKind input = BufferKind::Send;
  if (p.preScale) {
    schedule.steps.push_back({StepKind::Scale, -1, whole(BufferKind::Send), whole(BufferKind::Recv), {}});
    input = BufferKind::Recv;
  }
  if (n == 1) {
    if (!p.preScale)
      schedule.steps.push_back({StepKind::Copy, -1, whole(BufferKind::Send), whole(BufferKind::Recv), {}});
    return schedule;
  }
  const int next = p.ringOrder[(position + 1) % n];
  const int prev = p.ringOrder[(position + n - 1) % n];

  // Reduce-scatter: at step s, send chunk (pos - s) and fold chunk (pos - s - 1) from prev
  // into this rank's partial sum. Chunks are numbered by ring position.
  for (int s = 0; s < n - 1; ++s) {
    BufferKind from = s == 0 ? input : BufferKind::Recv;
    schedule.steps.push_back({StepKind::Send, next, chunkRange(from, position - s), {}, {}});
    schedule.steps.push_back({StepKind::RecvReduce,
                              prev,
                              chunkRange(input, position - s - 1),
                              chunkRange(BufferKind::Recv, position - s - 1),
                              {}});
  }
  // This rank now owns the fully reduced chunk (pos + 1).
  if (p.average) {
    BufferRange owned = chunkRange(BufferKind::Recv, position + 1);
    schedule.steps.push_back({StepKind::Divide, -1, owned, owned, {}});
  }
  // All-gather: pass the reduced chunks around the ring.
  for (int s = 0; s < n - 1; ++s) {
    schedule.steps.push_back({StepKind::Send, next, chunkRange(BufferKind::Recv, position + 1 - s), {}, {}});
    schedule.steps.push_back({StepKind::Recv, prev, {}, chunkRange(BufferKind::Recv, position - s), {}});
  }
  return schedule;
}

}  // namespace weft
