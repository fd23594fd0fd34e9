#include "algorithms/builders/reduce_scatter.h"

#include <algorithm>

#include "algorithms/builders/channels.h"
#include "algorithms/builders/power_of_two_fold.h"
#include "algorithms/builders/rail_layout.h"
#include "algorithms/builders/rank_runs.h"
#include "algorithms/builders/split_evenly.h"

namespace weft {

namespace {

// The ring over elements [first, first + elements) of every block: the whole call, or one
// channel's part of it (block b's part at b * block + first in Send, the result's at first in
// Recv).
Schedule ringReduceScatterPart(const ReduceScatterParams& p, const std::vector<int>& ring, size_t first,
                               size_t elements) {
  Schedule schedule;
  const int n = static_cast<int>(ring.size());
  schedule.divisor = static_cast<uint64_t>(n);
  const size_t block = p.recvCount * p.elementSize, part = elements * p.elementSize, skip = first * p.elementSize;
  if (part == 0) return schedule;
  const BufferRange result{BufferKind::Recv, skip, part};
  // This rank's contribution to block b (its own block is the result range when in place).
  auto input = [&](int b) {
    if (p.inPlace && b == p.rank) return result;
    return BufferRange{BufferKind::Send, static_cast<size_t>(b) * block + skip, part};
  };
  // The local operand for block b, written to `into` first when it must be scaled.
  auto operand = [&](int b, const BufferRange& into) {
    if (!p.preScale) return input(b);
    schedule.steps.push_back({StepKind::Scale, -1, input(b), into, {}});
    return into;
  };
  if (n == 1) {
    BufferRange local = operand(p.rank, result);
    if (!(local == result)) schedule.steps.push_back({StepKind::Copy, -1, local, result, {}});
    return schedule;  // a Divide by 1 changes nothing
  }
  const int pos = static_cast<int>(std::find(ring.begin(), ring.end(), p.rank) - ring.begin());
  const int next = ring[(pos + 1) % n];
  const int prev = ring[(pos + n - 1) % n];
  auto blockAt = [&](int position) { return ring[((position % n) + n) % n]; };
  auto slot = [&](int s) { return BufferRange{BufferKind::Scratch, static_cast<size_t>(s % 2) * part, part}; };
  schedule.scratchBytes = (n > 2 || p.preScale) ? 2 * part : 0;
  // Step 0 sends this rank's part of the block owned by position pos-1; at step s it folds its
  // part of block (pos-s-2) into the partial sum from prev, which it forwards next step. The
  // last fold (s = n-2) is this rank's own block, into Recv.
  schedule.steps.push_back({StepKind::Send, next, operand(blockAt(pos - 1), slot(1)), {}, {}});
  for (int s = 0; s < n - 1; ++s) {
    const bool last = s == n - 2;
    const BufferRange into = last ? result : slot(s);
    const BufferRange local = operand(blockAt(pos - s - 2), into);
    schedule.steps.push_back({StepKind::RecvReduce, prev, local, into, {}});
    if (!last) schedule.steps.push_back({StepKind::Send, next, into, {}, {}});
  }
  if (p.average) schedule.steps.push_back({StepKind::Divide, -1, result, result, {}});
  return schedule;
}

}  // namespace

Schedule buildRingReduceScatter(const ReduceScatterParams& p) {
  const std::vector<int> ring = orderOrIdentity(p.ringOrder, p.nranks);
  if (p.channels <= 1 || p.recvCount < 2 || ring.size() < 2) return ringReduceScatterPart(p, ring, 0, p.recvCount);
  Schedule merged = buildOnChannels(p.channels, p.recvCount, p.nodes, ring, p.elementSize, false,
                                    [&](const std::vector<int>& channelRing, size_t first, size_t elements) {
                                      return ringReduceScatterPart(p, channelRing, first, elements);
                                    });
  merged.divisor = static_cast<uint64_t>(ring.size());
  return merged;
}

namespace {

// Copies (or, for PreMulSum, scales) this rank's input blocks into Scratch: input block `rank`
// goes to scratchBlock(rank). The own block is read from Recv when in place.
template <typename ScratchBlock>
void stageInput(const ReduceScatterParams& p, const std::vector<int>& ranksInScratchOrder, ScratchBlock scratchBlock,
                Schedule* schedule) {
  const size_t block = p.recvCount * p.elementSize;
  const StepKind kind = p.preScale ? StepKind::Scale : StepKind::Copy;
  const int n = static_cast<int>(ranksInScratchOrder.size());
  auto stage = [&](int first, int last) {
    forEachRankRun(ranksInScratchOrder, first, last, [&](int rank, int ranks) {
      BufferRange dst = scratchBlock(first);
      dst.bytes = static_cast<size_t>(ranks) * block;
      BufferRange src{BufferKind::Send, static_cast<size_t>(rank) * block, dst.bytes};
      schedule->steps.push_back({kind, -1, src, dst, {}});
      first += ranks;
    });
  };
  // The own block breaks the runs when it must be read from Recv.
  const int ownIndex = static_cast<int>(std::find(ranksInScratchOrder.begin(), ranksInScratchOrder.end(), p.rank) -
                                        ranksInScratchOrder.begin());
  if (!p.inPlace) return stage(0, n - 1);
  if (ownIndex > 0) stage(0, ownIndex - 1);
  schedule->steps.push_back({kind, -1, {BufferKind::Recv, 0, block}, scratchBlock(ownIndex), {}});
  if (ownIndex < n - 1) stage(ownIndex + 1, n - 1);
}

}  // namespace

Schedule buildRecursiveHalvingReduceScatter(const ReduceScatterParams& p) {
  const std::vector<int> order = orderOrIdentity(p.ringOrder, p.nranks);
  const int n = static_cast<int>(order.size());
  if (n == 1) return buildRingReduceScatter(p);
  Schedule schedule;
  schedule.divisor = static_cast<uint64_t>(n);
  const size_t block = p.recvCount * p.elementSize;
  if (block == 0) return schedule;
  const BufferRange result{BufferKind::Recv, 0, block};
  // Scratch holds the partial sums by position: position q's block at q * block.
  schedule.scratchBytes = static_cast<size_t>(n) * block;
  auto positions = [&](int first, int last) {
    return BufferRange{BufferKind::Scratch, static_cast<size_t>(first) * block,
                       static_cast<size_t>(last - first + 1) * block};
  };
  stageInput(
      p, order, [&](int q) { return positions(q, q); }, &schedule);
  const int pos = static_cast<int>(std::find(order.begin(), order.end(), p.rank) - order.begin());
  const PowerOfTwoFold fold(n);
  auto finish = [&](BufferRange reduced) {
    schedule.steps.push_back({p.average ? StepKind::Divide : StepKind::Copy, -1, reduced, result, {}});
  };
  if (fold.sitsOut(pos)) {
    const int partner = order[pos + 1];
    schedule.steps.push_back({StepKind::Send, partner, positions(0, n - 1), {}, {}});
    schedule.steps.push_back({StepKind::Recv, partner, {}, result, {}});
    if (p.average) schedule.steps.push_back({StepKind::Divide, -1, result, result, {}});
    return schedule;
  }
  if (fold.standsIn(pos))
    schedule.steps.push_back({StepKind::RecvReduce, order[pos - 1], positions(0, n - 1), positions(0, n - 1), {}});
  const int v = fold.virtualRank(pos);
  // Virtual ranks [lo, hi) are the blocks this rank still reduces; each exchange gives away the
  // half that the partner's group owns and reduces the partner's copy of the half it keeps.
  int lo = 0, hi = fold.pw;
  for (int mask = fold.pw / 2; mask >= 1; mask >>= 1) {
    const int mid = lo + mask;
    const bool upper = v & mask;
    const int keepLo = upper ? mid : lo, keepHi = upper ? hi : mid;
    const int giveLo = upper ? lo : mid, giveHi = upper ? mid : hi;
    const int peer = order[fold.actingPosition(v ^ mask)];
    schedule.steps.push_back(
        {StepKind::Send, peer, positions(fold.firstPosition(giveLo), fold.lastPosition(giveHi - 1)), {}, {}});
    const BufferRange keep = positions(fold.firstPosition(keepLo), fold.lastPosition(keepHi - 1));
    schedule.steps.push_back({StepKind::RecvReduce, peer, keep, keep, {}});
    lo = keepLo;
    hi = keepHi;
  }
  finish(positions(pos, pos));
  if (fold.standsIn(pos))
    schedule.steps.push_back({StepKind::Send, order[pos - 1], positions(pos - 1, pos - 1), {}, {}});
  return schedule;
}

Schedule buildHierarchicalReduceScatter(const ReduceScatterParams& p) {
  if (!hasRails(p.nodes)) {
    ReduceScatterParams ring = p;
    ring.ringOrder = nodeMajorOrder(p.nodes);
    return buildRingReduceScatter(ring);
  }
  Schedule schedule;
  const size_t block = p.recvCount * p.elementSize;
  const RailLayout at(p.nodes, p.rank, block);
  const int nodes = at.nodeCount, local = at.local;
  schedule.divisor = static_cast<uint64_t>(nodes) * static_cast<uint64_t>(local);
  if (block == 0) return schedule;
  schedule.scratchBytes = at.scratchBytes();
  std::vector<int> railMajor;
  for (int j = 0; j < local; ++j)
    for (int k = 0; k < nodes; ++k) railMajor.push_back(p.nodes[k][j]);
  stageInput(
      p, railMajor, [&](int index) { return at.slot(index / nodes, index % nodes); }, &schedule);
  // (1) Inside the node, whole rails: local rank l ends with the node's sum of rail l.
  for (int s = 0; s < local - 1; ++s) {
    schedule.steps.push_back({StepKind::Send, at.next(), at.rail(at.l - s - 1), {}, {}});
    schedule.steps.push_back({StepKind::RecvReduce, at.prev(), at.rail(at.l - s - 2), at.rail(at.l - s - 2), {}});
  }
  // (2) Along rail l: the block of node k's rank ends reduced on node k.
  const BufferRange result{BufferKind::Recv, 0, block};
  for (int s = 0; s < nodes - 1; ++s) {
    const BufferRange partial = at.slot(at.l, at.myNode - s - 2);
    schedule.steps.push_back({StepKind::Send, at.up(), at.slot(at.l, at.myNode - s - 1), {}, {}});
    schedule.steps.push_back({StepKind::RecvReduce, at.down(), partial, s == nodes - 2 ? result : partial, {}});
  }
  if (p.average) schedule.steps.push_back({StepKind::Divide, -1, result, result, {}});
  return schedule;
}

}  // namespace weft
