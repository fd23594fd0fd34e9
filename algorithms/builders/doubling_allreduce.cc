#include "algorithms/builders/doubling_allreduce.h"

#include <algorithm>

#include "algorithms/builders/power_of_two_fold.h"

namespace weft {

Schedule buildDoublingAllReduce(const DoublingAllReduceParams& p) {
  Schedule schedule;
  const int n = static_cast<int>(p.order.size());
  schedule.divisor = static_cast<uint64_t>(n);
  auto whole = [&](BufferKind buffer) { return BufferRange{buffer, 0, p.count * p.elementSize}; };
  if (n <= 1) {
    schedule.steps.push_back({StepKind::Copy, -1, whole(BufferKind::Send), whole(BufferKind::Recv), {}});
    return schedule;
  }
  if (p.count == 0) return schedule;  // every rank skips every exchange alike
  const int position = static_cast<int>(std::find(p.order.begin(), p.order.end(), p.rank) - p.order.begin());
  const PowerOfTwoFold fold(n);
  auto push = [&](StepKind kind, int peer, BufferRange src, BufferRange dst) {
    schedule.steps.push_back({kind, peer, src, dst, {}});
  };

  if (fold.sitsOut(position)) {  // hand the input over, get the result back
    push(StepKind::Send, p.order[position + 1], whole(BufferKind::Send), {});
    push(StepKind::Recv, p.order[position + 1], {}, whole(BufferKind::Recv));
    return schedule;
  }
  BufferKind current = BufferKind::Send;  // where this rank's partial result is
  if (fold.standsIn(position)) {
    push(StepKind::RecvReduce, p.order[position - 1], whole(BufferKind::Send), whole(BufferKind::Recv));
    current = BufferKind::Recv;
  }
  const int virtualRank = fold.virtualRank(position);
  for (int mask = 1; mask < fold.pw; mask <<= 1) {
    const int peer = p.order[fold.actingPosition(virtualRank ^ mask)];
    // The executor orders the reduction's writes after the send has taken each slice.
    push(StepKind::Send, peer, whole(current), {});
    push(StepKind::RecvReduce, peer, whole(current), whole(BufferKind::Recv));
    current = BufferKind::Recv;
  }
  if (p.average) push(StepKind::Divide, -1, whole(BufferKind::Recv), whole(BufferKind::Recv));
  if (fold.standsIn(position)) push(StepKind::Send, p.order[position - 1], whole(BufferKind::Recv), {});
  return schedule;
}

}  // namespace weft
