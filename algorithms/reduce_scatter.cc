#include "algorithms/reduce_scatter.h"

#include <algorithm>
#include <numeric>

namespace weft {

Schedule buildRingReduceScatter(const ReduceScatterParams& p) {
  Schedule schedule;
  std::vector<int> ring = p.ringOrder;
  if (ring.empty()) {
    ring.resize(p.nranks);
    std::iota(ring.begin(), ring.end(), 0);
  }
  const int n = static_cast<int>(ring.size());
  schedule.divisor = static_cast<uint64_t>(n);
  const size_t block = p.recvCount * p.elementSize;
  if (block == 0) return schedule;
  const BufferRange result{BufferKind::Recv, 0, block};
  // This rank's contribution to block b (its own block is the result range when in place).
  auto input = [&](int b) {
    if (p.inPlace && b == p.rank) return result;
    return BufferRange{BufferKind::Send, static_cast<size_t>(b) * block, block};
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
  auto slot = [&](int s) { return BufferRange{BufferKind::Scratch, static_cast<size_t>(s % 2) * block, block}; };
  schedule.scratchBytes = (n > 2 || p.preScale) ? 2 * block : 0;
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

}  // namespace weft
