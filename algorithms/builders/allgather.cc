#include "algorithms/builders/allgather.h"

#include <algorithm>

#include "algorithms/builders/channels.h"
#include "algorithms/builders/power_of_two_fold.h"
#include "algorithms/builders/rail_layout.h"
#include "algorithms/builders/rank_runs.h"
#include "algorithms/builders/split_evenly.h"

namespace weft {

namespace {

// This rank's contribution: the send buffer, or its block of Recv when in place.
BufferRange ownBlock(const AllGatherParams& p) {
  const size_t block = p.count * p.elementSize;
  if (p.inPlace) return {BufferKind::Recv, static_cast<size_t>(p.rank) * block, block};
  return {BufferKind::Send, 0, block};
}

}  // namespace

namespace {

// The ring over elements [first, first + elements) of every rank's block: the whole call, or
// one channel's part of it (rank r's part at r * block + first in Recv).
Schedule ringAllGatherPart(const AllGatherParams& p, const std::vector<int>& ring, size_t first, size_t elements) {
  Schedule schedule;
  const int n = static_cast<int>(ring.size());
  const size_t block = p.count * p.elementSize, part = elements * p.elementSize, skip = first * p.elementSize;
  if (part == 0) return schedule;
  auto recvPart = [&](int r) { return BufferRange{BufferKind::Recv, static_cast<size_t>(r) * block + skip, part}; };
  BufferRange own = ownBlock(p);
  own.offset += skip;
  own.bytes = part;
  if (!p.inPlace) schedule.steps.push_back({StepKind::Copy, -1, own, recvPart(p.rank), {}});
  if (n == 1) return schedule;
  const int pos = static_cast<int>(std::find(ring.begin(), ring.end(), p.rank) - ring.begin());
  const int next = ring[(pos + 1) % n];
  const int prev = ring[(pos + n - 1) % n];
  // Step s: send the block of ring position pos-s (own at s = 0), receive that of pos-s-1.
  for (int s = 0; s < n - 1; ++s) {
    BufferRange out = s == 0 ? own : recvPart(ring[(pos - s + n) % n]);
    schedule.steps.push_back({StepKind::Send, next, out, {}, {}});
    schedule.steps.push_back({StepKind::Recv, prev, {}, recvPart(ring[(pos - s - 1 + 2 * n) % n]), {}});
  }
  return schedule;
}

}  // namespace

Schedule buildRingAllGather(const AllGatherParams& p) {
  const std::vector<int> ring = orderOrIdentity(p.ringOrder, p.nranks);
  if (p.channels <= 1 || p.count < 2 || ring.size() < 2) return ringAllGatherPart(p, ring, 0, p.count);
  return buildOnChannels(p.channels, p.count, p.nodes, ring, p.elementSize, false,
                         [&](const std::vector<int>& channelRing, size_t first, size_t elements) {
                           return ringAllGatherPart(p, channelRing, first, elements);
                         });
}

Schedule buildBruckAllGather(const AllGatherParams& p) {
  Schedule schedule;
  const int n = p.nranks;
  const int r = p.rank;
  const size_t block = p.count * p.elementSize;
  if (block == 0) return schedule;
  const BufferRange own = ownBlock(p);
  if (n == 1) {
    if (!p.inPlace) schedule.steps.push_back({StepKind::Copy, -1, own, {BufferKind::Recv, 0, block}, {}});
    return schedule;
  }
  // Scratch block i holds rank (r + i) % n's contribution once it has arrived.
  schedule.scratchBytes = static_cast<size_t>(n) * block;
  auto scratch = [&](int first, int blocks) {
    return BufferRange{BufferKind::Scratch, static_cast<size_t>(first) * block, static_cast<size_t>(blocks) * block};
  };
  schedule.steps.push_back({StepKind::Copy, -1, own, scratch(0, 1), {}});
  for (int k = 1; k < n; k <<= 1) {
    const int blocks = std::min(k, n - k);
    schedule.steps.push_back({StepKind::Send, (r - k + n) % n, scratch(0, blocks), {}, {}});
    schedule.steps.push_back({StepKind::Recv, (r + k) % n, {}, scratch(k, blocks), {}});
  }
  // Rotate: scratch blocks [0, n-r) are ranks r..n-1, blocks [n-r, n) are ranks 0..r-1.
  schedule.steps.push_back({StepKind::Copy,
                            -1,
                            scratch(0, n - r),
                            {BufferKind::Recv, static_cast<size_t>(r) * block, static_cast<size_t>(n - r) * block},
                            {}});
  if (r > 0)
    schedule.steps.push_back(
        {StepKind::Copy, -1, scratch(n - r, r), {BufferKind::Recv, 0, static_cast<size_t>(r) * block}, {}});
  return schedule;
}

Schedule buildRecursiveDoublingAllGather(const AllGatherParams& p) {
  Schedule schedule;
  const std::vector<int> order = orderOrIdentity(p.ringOrder, p.nranks);
  const int n = static_cast<int>(order.size());
  const size_t block = p.count * p.elementSize;
  if (block == 0) return schedule;
  auto recvBlock = [&](int r) { return BufferRange{BufferKind::Recv, static_cast<size_t>(r) * block, block}; };
  const BufferRange own = ownBlock(p);
  if (!p.inPlace) schedule.steps.push_back({StepKind::Copy, -1, own, recvBlock(p.rank), {}});
  if (n == 1) return schedule;
  // Blocks of positions [first, last] to or from `peer`, one message per run of ranks.
  auto move = [&](StepKind kind, int peer, int first, int last) {
    forEachRankRun(order, first, last, [&](int rank, int ranks) {
      BufferRange range{BufferKind::Recv, static_cast<size_t>(rank) * block, static_cast<size_t>(ranks) * block};
      if (kind == StepKind::Send)
        schedule.steps.push_back({kind, peer, range, {}, {}});
      else
        schedule.steps.push_back({kind, peer, {}, range, {}});
    });
  };
  const int pos = static_cast<int>(std::find(order.begin(), order.end(), p.rank) - order.begin());
  const PowerOfTwoFold fold(n);
  if (fold.sitsOut(pos)) {
    const int partner = order[pos + 1];
    schedule.steps.push_back({StepKind::Send, partner, own, {}, {}});
    if (pos > 0) move(StepKind::Recv, partner, 0, pos - 1);
    move(StepKind::Recv, partner, pos + 1, n - 1);
    return schedule;
  }
  if (fold.standsIn(pos)) schedule.steps.push_back({StepKind::Recv, order[pos - 1], {}, recvBlock(order[pos - 1]), {}});
  const int v = fold.virtualRank(pos);
  // Before the exchange at distance `mask`, virtual rank v holds the blocks of its aligned group
  // of `mask` virtual ranks; the partner's group is the neighbouring one.
  for (int mask = 1; mask < fold.pw; mask <<= 1) {
    const int mine = v & ~(mask - 1), theirs = mine ^ mask;
    const int peer = order[fold.actingPosition(v ^ mask)];
    move(StepKind::Send, peer, fold.firstPosition(mine), fold.lastPosition(mine + mask - 1));
    move(StepKind::Recv, peer, fold.firstPosition(theirs), fold.lastPosition(theirs + mask - 1));
  }
  if (fold.standsIn(pos)) {  // everything but the partner's own block
    if (pos > 1) move(StepKind::Send, order[pos - 1], 0, pos - 2);
    move(StepKind::Send, order[pos - 1], pos, n - 1);
  }
  return schedule;
}

Schedule buildHierarchicalAllGather(const AllGatherParams& p) {
  if (!hasRails(p.nodes)) {
    AllGatherParams ring = p;
    ring.ringOrder = nodeMajorOrder(p.nodes);
    return buildRingAllGather(ring);
  }
  Schedule schedule;
  const size_t block = p.count * p.elementSize;
  if (block == 0) return schedule;
  const RailLayout at(p.nodes, p.rank, block);
  const int nodes = at.nodeCount, local = at.local;
  schedule.scratchBytes = at.scratchBytes();
  const BufferRange own = ownBlock(p);
  schedule.steps.push_back({StepKind::Copy, -1, own, at.slot(at.l, at.myNode), {}});
  for (int s = 0; s < nodes - 1; ++s) {  // (1) along the rail
    schedule.steps.push_back({StepKind::Send, at.up(), at.slot(at.l, at.myNode - s), {}, {}});
    schedule.steps.push_back({StepKind::Recv, at.down(), {}, at.slot(at.l, at.myNode - s - 1), {}});
  }
  for (int s = 0; s < local - 1; ++s) {  // (2) whole rails inside the node
    schedule.steps.push_back({StepKind::Send, at.next(), at.rail(at.l - s), {}, {}});
    schedule.steps.push_back({StepKind::Recv, at.prev(), {}, at.rail(at.l - s - 1), {}});
  }
  for (int j = 0; j < local; ++j)  // (3) into place
    for (int k = 0; k < nodes; ++k) {
      const int rank = p.nodes[k][j];
      if (rank == p.rank && p.inPlace) continue;
      schedule.steps.push_back(
          {StepKind::Copy, -1, at.slot(j, k), {BufferKind::Recv, static_cast<size_t>(rank) * block, block}, {}});
    }
  return schedule;
}

}  // namespace weft
