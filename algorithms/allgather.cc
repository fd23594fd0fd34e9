#include "algorithms/allgather.h"

#include <algorithm>
#include <numeric>

namespace weft {

namespace {

std::vector<int> ringOf(const AllGatherParams& p) {
  if (!p.ringOrder.empty()) return p.ringOrder;
  std::vector<int> ring(p.nranks);
  std::iota(ring.begin(), ring.end(), 0);
  return ring;
}

}  // namespace

Schedule buildRingAllGather(const AllGatherParams& p) {
  Schedule schedule;
  const std::vector<int> ring = ringOf(p);
  const int n = static_cast<int>(ring.size());
  const size_t block = p.count * p.elementSize;
  if (block == 0) return schedule;
  auto recvBlock = [&](int r) { return BufferRange{BufferKind::Recv, static_cast<size_t>(r) * block, block}; };
  const BufferRange own = p.inPlace ? recvBlock(p.rank) : BufferRange{BufferKind::Send, 0, block};
  if (!p.inPlace) schedule.steps.push_back({StepKind::Copy, -1, own, recvBlock(p.rank), {}});
  if (n == 1) return schedule;
  const int pos = static_cast<int>(std::find(ring.begin(), ring.end(), p.rank) - ring.begin());
  const int next = ring[(pos + 1) % n];
  const int prev = ring[(pos + n - 1) % n];
  // Step s: send the block of ring position pos-s (own at s = 0), receive that of pos-s-1.
  for (int s = 0; s < n - 1; ++s) {
    BufferRange out = s == 0 ? own : recvBlock(ring[(pos - s + n) % n]);
    schedule.steps.push_back({StepKind::Send, next, out, {}, {}});
    schedule.steps.push_back({StepKind::Recv, prev, {}, recvBlock(ring[(pos - s - 1 + 2 * n) % n]), {}});
  }
  return schedule;
}

Schedule buildBruckAllGather(const AllGatherParams& p) {
  Schedule schedule;
  const int n = p.nranks;
  const int r = p.rank;
  const size_t block = p.count * p.elementSize;
  if (block == 0) return schedule;
  const BufferRange own = p.inPlace ? BufferRange{BufferKind::Recv, static_cast<size_t>(r) * block, block}
                                    : BufferRange{BufferKind::Send, 0, block};
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
  schedule.steps.push_back({StepKind::Copy, -1, scratch(0, n - r),
                            {BufferKind::Recv, static_cast<size_t>(r) * block, static_cast<size_t>(n - r) * block}, {}});
  if (r > 0)
    schedule.steps.push_back({StepKind::Copy, -1, scratch(n - r, r), {BufferKind::Recv, 0, static_cast<size_t>(r) * block}, {}});
  return schedule;
}

}  // namespace weft
