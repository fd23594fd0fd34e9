#include "algorithms/builders/rhd_allreduce.h"

#include <algorithm>

#include "algorithms/builders/power_of_two_fold.h"
#include "algorithms/builders/split_evenly.h"

namespace weft {

Schedule buildRhdAllReduce(const RhdAllReduceParams& p) {
  Schedule schedule;
  const int n = static_cast<int>(p.order.size());
  schedule.divisor = static_cast<uint64_t>(n);
  const size_t es = p.elementSize;
  auto range = [&](BufferKind buffer, size_t begin, size_t end) {
    return BufferRange{buffer, begin * es, (end - begin) * es};
  };
  auto push = [&](StepKind kind, int peer, BufferRange src, BufferRange dst) {
    size_t bytes = kind == StepKind::Recv ? dst.bytes : src.bytes;
    if (bytes) schedule.steps.push_back({kind, peer, src, dst, {}});  // both sides skip the same empty pieces
  };
  if (n <= 1) {
    schedule.steps.push_back(
        {StepKind::Copy, -1, range(BufferKind::Send, 0, p.count), range(BufferKind::Recv, 0, p.count), {}});
    return schedule;
  }
  const int position = static_cast<int>(std::find(p.order.begin(), p.order.end(), p.rank) - p.order.begin());
  const PowerOfTwoFold fold(n);
  const int pw = fold.pw;
  auto realRank = [&](int v) { return p.order[fold.actingPosition(v)]; };

  BufferKind current = BufferKind::Send;  // where this rank's partial sums are
  if (fold.sitsOut(position)) {           // hand the input over, get the result back
    push(StepKind::Send, p.order[position + 1], range(BufferKind::Send, 0, p.count), {});
    push(StepKind::Recv, p.order[position + 1], {}, range(BufferKind::Recv, 0, p.count));
    return schedule;
  }
  if (fold.standsIn(position)) {
    push(StepKind::RecvReduce, p.order[position - 1], range(BufferKind::Send, 0, p.count),
         range(BufferKind::Recv, 0, p.count));
    if (p.count) current = BufferKind::Recv;
  }
  const int virtualRank = fold.virtualRank(position);

  struct Exchange {
    int peer;
    size_t keepBegin, keepEnd, giveBegin, giveEnd;
  };
  std::vector<Exchange> exchanges;
  size_t lo = 0, hi = p.count;
  for (int mask = 1; mask < pw; mask <<= 1) {
    int peer = realRank(virtualRank ^ mask);
    size_t mid = lo + splitEvenly(hi - lo, 2, 0).end;
    Exchange e{peer, lo, mid, mid, hi};
    if (virtualRank & mask) e = {peer, mid, hi, lo, mid};
    push(StepKind::Send, peer, range(current, e.giveBegin, e.giveEnd), {});
    push(StepKind::RecvReduce, peer, range(current, e.keepBegin, e.keepEnd),
         range(BufferKind::Recv, e.keepBegin, e.keepEnd));
    current = BufferKind::Recv;
    exchanges.push_back(e);
    lo = e.keepBegin;
    hi = e.keepEnd;
  }
  if (p.average) push(StepKind::Divide, -1, range(BufferKind::Recv, lo, hi), range(BufferKind::Recv, lo, hi));
  for (auto it = exchanges.rbegin(); it != exchanges.rend(); ++it) {
    push(StepKind::Send, it->peer, range(BufferKind::Recv, it->keepBegin, it->keepEnd), {});
    push(StepKind::Recv, it->peer, {}, range(BufferKind::Recv, it->giveBegin, it->giveEnd));
  }
  if (fold.standsIn(position)) push(StepKind::Send, p.order[position - 1], range(BufferKind::Recv, 0, p.count), {});
  return schedule;
}

}  // namespace weft
