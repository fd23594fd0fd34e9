#include "algorithms/builders/direct_allreduce.h"

#include "algorithms/builders/split_evenly.h"

namespace weft {

namespace {

void barrier(Schedule& schedule, int rank, int nranks) {
  for (int p = 0; p < nranks; ++p)
    if (p != rank) schedule.steps.push_back({StepKind::Notify, p, {}, {}, {}});
  for (int p = 0; p < nranks; ++p)
    if (p != rank) schedule.steps.push_back({StepKind::WaitNotify, p, {}, {}, {}});
}

}  // namespace

Schedule buildDirectAllReduce(const DirectAllReduceParams& p) {
  Schedule schedule;
  schedule.divisor = static_cast<uint64_t>(p.nranks);
  auto chunk = [&](BufferKind buffer, int index, int owner) {
    ElementSpan span = splitEvenly(p.count, p.nranks, index);
    return BufferRange{buffer, span.begin * p.elementSize, (span.end - span.begin) * p.elementSize, owner};
  };
  const int r = p.rank;
  BufferRange mine = chunk(BufferKind::Recv, r, -1);
  // Own chunk = sum over every rank's send buffer.
  bool first = true;
  for (int q = 0; q < p.nranks; ++q) {
    if (q == r) continue;
    BufferRange accumulated = first ? chunk(BufferKind::Send, r, -1) : mine;
    schedule.steps.push_back({StepKind::Reduce, -1, accumulated, mine, chunk(BufferKind::Send, r, q)});
    first = false;
  }
  if (first) schedule.steps.push_back({StepKind::Copy, -1, chunk(BufferKind::Send, r, -1), mine, {}});
  if (p.average) schedule.steps.push_back({StepKind::Divide, -1, mine, mine, {}});
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
      last.dst2 = chunk(BufferKind::Recv, r, q);
      fused = true;
      continue;
    }
    schedule.steps.push_back({StepKind::Copy, -1, mine, chunk(BufferKind::Recv, r, q), {}});
  }
  // No rank returns (and no caller reuses its buffers) while a peer may still read or write them.
  barrier(schedule, r, p.nranks);
  return schedule;
}

}  // namespace weft
