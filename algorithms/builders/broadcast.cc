#include "algorithms/builders/broadcast.h"

#include <algorithm>

namespace weft {

namespace {

// The root's own part: Send -> Recv (skipped by the executor when in place).
void rootCopy(Schedule& schedule, size_t bytes) {
  schedule.steps.push_back({StepKind::Copy, -1, {BufferKind::Send, 0, bytes}, {BufferKind::Recv, 0, bytes}, {}});
}

}  // namespace

Schedule buildChainBroadcast(const BroadcastParams& p) {
  Schedule schedule;
  const std::vector<int> ring = orderOrIdentity(p.ringOrder, p.nranks);
  const int n = static_cast<int>(ring.size());
  const size_t bytes = p.count * p.elementSize;
  if (bytes == 0) return schedule;
  const int rootPos = static_cast<int>(std::find(ring.begin(), ring.end(), p.root) - ring.begin());
  const int pos = static_cast<int>(std::find(ring.begin(), ring.end(), p.rank) - ring.begin());
  const int hop = (pos - rootPos + n) % n;  // distance from the root along the chain
  const int next = ring[(pos + 1) % n];
  const int prev = ring[(pos + n - 1) % n];
  const BufferRange whole{BufferKind::Recv, 0, bytes};
  if (hop == 0) {
    rootCopy(schedule, bytes);
    if (n > 1) schedule.steps.push_back({StepKind::Send, next, {BufferKind::Send, 0, bytes}, {}, {}});
    return schedule;
  }
  schedule.steps.push_back({StepKind::Recv, prev, {}, whole, {}});
  if (hop < n - 1) schedule.steps.push_back({StepKind::Send, next, whole, {}, {}});
  return schedule;
}

Schedule buildBinomialBroadcast(const BroadcastParams& p) {
  Schedule schedule;
  const int n = p.nranks;
  const size_t bytes = p.count * p.elementSize;
  if (bytes == 0) return schedule;
  const int v = (p.rank - p.root + n) % n;  // rank relative to the root
  auto actual = [&](int relative) { return (relative + p.root) % n; };
  BufferRange data{BufferKind::Recv, 0, bytes};
  // Receive from the parent: v minus its lowest set bit.
  int mask = 1;
  while (mask < n) {
    if (v & mask) {
      schedule.steps.push_back({StepKind::Recv, actual(v - mask), {}, data, {}});
      break;
    }
    mask <<= 1;
  }
  if (v == 0) {
    rootCopy(schedule, bytes);
    data = {BufferKind::Send, 0, bytes};
  }
  // Serve the children v + mask/2, v + mask/4, ..., the largest subtree first.
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (v + mask < n) schedule.steps.push_back({StepKind::Send, actual(v + mask), data, {}, {}});
  return schedule;
}

}  // namespace weft
