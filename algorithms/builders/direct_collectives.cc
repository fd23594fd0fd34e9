#include "algorithms/builders/direct_collectives.h"

#include "algorithms/builders/split_evenly.h"

namespace weft {

namespace {

// Every rank tells every peer it is done, then waits for every peer's word.
void barrier(Schedule& schedule, int rank, int nranks) {
  for (int p = 0; p < nranks; ++p)
    if (p != rank) schedule.steps.push_back({StepKind::Notify, p, {}, {}, {}});
  for (int p = 0; p < nranks; ++p)
    if (p != rank) schedule.steps.push_back({StepKind::WaitNotify, p, {}, {}, {}});
}

// Bytes [begin, end) of `buffer` of `owner` (-1: this rank's).
BufferRange range(BufferKind buffer, size_t begin, size_t bytes, int owner = -1) {
  return BufferRange{buffer, begin, bytes, owner};
}

// The owner to name for rank `rank`'s buffer: -1 where that is this rank.
int ownerOf(const DirectParams& p, int rank) { return rank == p.rank ? -1 : rank; }

// Chunk `index` of `count` elements split evenly over the ranks.
BufferRange chunk(const DirectParams& p, BufferKind buffer, int index, int owner = -1) {
  ElementSpan span = splitEvenly(p.count, p.nranks, index);
  return range(buffer, span.begin * p.elementSize, (span.end - span.begin) * p.elementSize, owner);
}

// `into` = the sum of `part` of every rank's send buffer (`part(q)`: rank q's, -1 for this
// rank's own), divided by the rank count for an average. `firstPeer`'s part is read first, in
// the pass that first writes `into`: where `into` is that peer's buffer and the peer is in
// place, its part is `into` itself.
template <typename Part>
void sumOfEveryRank(Schedule& schedule, const DirectParams& p, Part part, BufferRange into, int firstPeer = -1) {
  bool first = true;
  for (int i = 0; i < p.nranks; ++i) {
    // Peers in order from firstPeer (or from 0), this rank left out.
    const int q = firstPeer >= 0 ? (firstPeer + i) % p.nranks : i;
    if (q == p.rank) continue;
    schedule.steps.push_back({StepKind::Reduce, -1, first ? part(-1) : into, into, part(q)});
    first = false;
  }
  if (first) schedule.steps.push_back({StepKind::Copy, -1, part(-1), into, {}});
  if (p.average) schedule.steps.push_back({StepKind::Divide, -1, into, into, {}});
}

// A broadcast, gather or scatter: each rank copies its block, then the root keeps its buffers
// until every peer has read or written its block, and each peer tells the root it has.
Schedule rootedCopy(const DirectParams& p, BufferRange src, BufferRange dst) {
  Schedule schedule;
  schedule.steps.push_back({StepKind::Copy, -1, src, dst, {}});
  if (p.rank == p.root) {
    for (int q = 0; q < p.nranks; ++q)
      if (q != p.root) schedule.steps.push_back({StepKind::WaitNotify, q, {}, {}, {}});
  } else {
    schedule.steps.push_back({StepKind::Notify, p.root, {}, {}, {}});
  }
  return schedule;
}

}  // namespace

Schedule buildDirectAllReduce(const DirectParams& p) {
  Schedule schedule;
  schedule.divisor = static_cast<uint64_t>(p.nranks);
  const int r = p.rank;
  BufferRange mine = chunk(p, BufferKind::Recv, r);
  sumOfEveryRank(
      schedule, p, [&](int owner) { return chunk(p, BufferKind::Send, r, owner); }, mine);
  // Own chunk into every peer's receive buffer. Where the reduction is the last step, it writes
  // the first peer's copy itself, in the same pass (two ranks: the whole schedule is that one
  // step and the barrier). Only this rank touches chunk r of any buffer, so no peer needs to be
  // told before; the copies are ordered after the reduction that read the same bytes of the
  // peer's send buffer, which in place is its receive buffer.
  bool fused = false;
  for (int q = 0; q < p.nranks; ++q) {
    if (q == r) continue;
    Step& last = schedule.steps.back();
    if (!fused && last.kind == StepKind::Reduce) {
      last.dst2 = chunk(p, BufferKind::Recv, r, q);
      fused = true;
      continue;
    }
    schedule.steps.push_back({StepKind::Copy, -1, mine, chunk(p, BufferKind::Recv, r, q), {}});
  }
  // No rank returns (and no caller reuses its buffers) while a peer may still read or write them.
  barrier(schedule, r, p.nranks);
  return schedule;
}

Schedule buildDirectAllGather(const DirectParams& p) {
  Schedule schedule;
  const size_t block = p.count * p.elementSize;
  const BufferRange mine = range(BufferKind::Recv, p.rank * block, block);
  auto theirs = [&](int q) { return range(BufferKind::Recv, p.rank * block, block, q); };
  // The first copy writes the next rank's block too, in the same pass (two ranks: the whole
  // schedule is that step and the barrier); in place its own destination is its source and gets
  // nothing. Further peers' copies are taken from block r of the receive buffer, after it: in
  // place that is the send buffer under another name, which the executor could not order
  // against the first copy. Only this rank writes block r of any receive buffer.
  const int next = (p.rank + 1) % p.nranks;
  Step first{StepKind::Copy, -1, range(BufferKind::Send, 0, block), mine, {}};
  if (next != p.rank) first.dst2 = theirs(next);
  schedule.steps.push_back(first);
  for (int q = 0; q < p.nranks; ++q)
    if (q != p.rank && q != next) schedule.steps.push_back({StepKind::Copy, -1, mine, theirs(q), {}});
  barrier(schedule, p.rank, p.nranks);  // every block written into this rank's buffer, this rank's into every peer's
  return schedule;
}

Schedule buildDirectReduceScatter(const DirectParams& p) {
  Schedule schedule;
  schedule.divisor = static_cast<uint64_t>(p.nranks);
  const size_t block = p.count * p.elementSize;
  // In place the receive buffer is block r of the send buffer: the first sum reads and writes
  // the same elements, and peers read only their own blocks of it.
  sumOfEveryRank(
      schedule, p, [&](int owner) { return range(BufferKind::Send, p.rank * block, block, owner); },
      range(BufferKind::Recv, 0, block));
  barrier(schedule, p.rank, p.nranks);  // the peers have read block r of this rank's send buffer
  return schedule;
}

Schedule buildDirectBroadcast(const DirectParams& p) {
  const size_t bytes = p.count * p.elementSize;
  return rootedCopy(p, range(BufferKind::Send, 0, bytes, ownerOf(p, p.root)), range(BufferKind::Recv, 0, bytes));
}

Schedule buildDirectReduce(const DirectParams& p) {
  Schedule schedule;
  schedule.divisor = static_cast<uint64_t>(p.nranks);
  const int r = p.rank;
  // In place at the root its receive buffer is its send buffer: chunk r of it is read and
  // written only by rank r, and read (first) before it is written.
  sumOfEveryRank(
      schedule, p, [&](int owner) { return chunk(p, BufferKind::Send, r, owner); },
      chunk(p, BufferKind::Recv, r, ownerOf(p, p.root)), p.root);
  barrier(schedule, r, p.nranks);  // every chunk of the root's result written, every send buffer read
  return schedule;
}

Schedule buildDirectAllToAll(const DirectParams& p) {
  Schedule schedule;
  const size_t block = p.count * p.elementSize;
  // Own block first, then the peers' from the next rank on, so that the ranks do not all write
  // into the same peer at once.
  for (int i = 0; i < p.nranks; ++i) {
    const int q = (p.rank + i) % p.nranks;
    schedule.steps.push_back({StepKind::Copy,
                              -1,
                              range(BufferKind::Send, q * block, block),
                              range(BufferKind::Recv, p.rank * block, block, ownerOf(p, q)),
                              {}});
  }
  barrier(schedule, p.rank, p.nranks);  // every block written into this rank's buffer, this rank's into every peer's
  return schedule;
}

Schedule buildDirectGather(const DirectParams& p) {
  const size_t block = p.count * p.elementSize;
  // In place at the root its send buffer is block root of its receive buffer: the copy moves nothing.
  return rootedCopy(p, range(BufferKind::Send, 0, block),
                    range(BufferKind::Recv, p.rank * block, block, ownerOf(p, p.root)));
}

Schedule buildDirectScatter(const DirectParams& p) {
  const size_t block = p.count * p.elementSize;
  // In place at the root its receive buffer is block root of its send buffer.
  return rootedCopy(p, range(BufferKind::Send, p.rank * block, block, ownerOf(p, p.root)),
                    range(BufferKind::Recv, 0, block));
}

}  // namespace weft
