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
  // Phase 1: own chunk = sum over every rank's send buffer.
  bool first = true;
  for (int q = 0; q < p.nranks; ++q) {
    if (q == r) continue;
    BufferRange accumulated = first ? chunk(BufferKind::Send, r, -1) : mine;
    schedule.steps.push_back({StepKind::Reduce, -1, accumulated, mine, chunk(BufferKind::Send, r, q)});
    first = false;
  }
  if (first) schedule.steps.push_back({StepKind::Copy, -1, chunk(BufferKind::Send, r, -1), mine, {}});
  if (p.average) schedule.steps.push_back({StepKind::Divide, -1, mine, mine, {}});
  barrier(schedule, r, p.nranks);
  // Phase 2: every other chunk from its owner's receive buffer.
  for (int q = 0; q < p.nranks; ++q)
    if (q != r)
      schedule.steps.push_back({StepKind::Copy, -1, chunk(BufferKind::Recv, q, q), chunk(BufferKind::Recv, q, -1), {}});
  barrier(schedule, r, p.nranks);
  return schedule;
}

}  // namespace weft
