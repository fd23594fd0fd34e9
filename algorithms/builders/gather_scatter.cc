#include "algorithms/builders/gather_scatter.h"

namespace weft {

namespace {

BufferRange blockOf(BufferKind buffer, int index, size_t block) {
  return {buffer, static_cast<size_t>(index) * block, block};
}

}  // namespace

Schedule buildLinearGather(const GatherScatterParams& p) {
  Schedule schedule;
  const size_t block = p.count * p.elementSize;
  if (block == 0) return schedule;
  if (p.rank != p.root) {
    schedule.steps.push_back({StepKind::Send, p.root, blockOf(BufferKind::Send, 0, block), {}, {}});
    return schedule;
  }
  if (!p.inPlace)
    schedule.steps.push_back(
        {StepKind::Copy, -1, blockOf(BufferKind::Send, 0, block), blockOf(BufferKind::Recv, p.root, block), {}});
  for (int k = 1; k < p.nranks; ++k) {
    const int q = (p.root + k) % p.nranks;
    schedule.steps.push_back({StepKind::Recv, q, {}, blockOf(BufferKind::Recv, q, block), {}});
  }
  return schedule;
}

Schedule buildLinearScatter(const GatherScatterParams& p) {
  Schedule schedule;
  const size_t block = p.count * p.elementSize;
  if (block == 0) return schedule;
  if (p.rank != p.root) {
    schedule.steps.push_back({StepKind::Recv, p.root, {}, blockOf(BufferKind::Recv, 0, block), {}});
    return schedule;
  }
  // In place the root's recv buffer is its send block `root`, already where it belongs, and the
  // root writes nothing: sending straight out of the send buffer needs no hazard tracking.
  for (int k = 1; k < p.nranks; ++k) {
    const int q = (p.root + k) % p.nranks;
    schedule.steps.push_back({StepKind::Send, q, blockOf(BufferKind::Send, q, block), {}, {}});
  }
  if (!p.inPlace)
    schedule.steps.push_back(
        {StepKind::Copy, -1, blockOf(BufferKind::Send, p.root, block), blockOf(BufferKind::Recv, 0, block), {}});
  return schedule;
}

}  // namespace weft
