#include "algorithms/builders/alltoall.h"

#include <algorithm>

namespace weft {

namespace {

BufferRange blocks(BufferKind buffer, size_t base, int first, int count, size_t block) {
  return {buffer, base + static_cast<size_t>(first) * block, static_cast<size_t>(count) * block};
}

}  // namespace

Schedule buildPairwiseAllToAll(const AllToAllParams& p) {
  Schedule schedule;
  const int n = p.nranks;
  const int r = p.rank;
  const size_t block = p.count * p.elementSize;
  if (block == 0) return schedule;
  BufferKind input = BufferKind::Send;
  if (p.inPlace && n > 1) {
    schedule.scratchBytes = static_cast<size_t>(n) * block;
    schedule.steps.push_back({StepKind::Copy,
                              -1,
                              blocks(BufferKind::Recv, 0, 0, n, block),
                              blocks(BufferKind::Scratch, 0, 0, n, block),
                              {}});
    input = BufferKind::Scratch;
  } else if (p.inPlace) {
    return schedule;  // one rank, in place: nothing moves
  }
  schedule.steps.push_back(
      {StepKind::Copy, -1, blocks(input, 0, r, 1, block), blocks(BufferKind::Recv, 0, r, 1, block), {}});
  for (int k = 1; k < n; ++k) {
    const int to = (r + k) % n;
    const int from = (r - k + n) % n;
    schedule.steps.push_back({StepKind::Send, to, blocks(input, 0, to, 1, block), {}, {}});
    schedule.steps.push_back({StepKind::Recv, from, {}, blocks(BufferKind::Recv, 0, from, 1, block), {}});
  }
  return schedule;
}

Schedule buildBruckAllToAll(const AllToAllParams& p) {
  Schedule schedule;
  const int n = p.nranks;
  const int r = p.rank;
  const size_t block = p.count * p.elementSize;
  if (block == 0) return schedule;
  const BufferKind input = p.inPlace ? BufferKind::Recv : BufferKind::Send;
  if (n == 1) {
    if (!p.inPlace)
      schedule.steps.push_back(
          {StepKind::Copy, -1, blocks(input, 0, 0, 1, block), blocks(BufferKind::Recv, 0, 0, 1, block), {}});
    return schedule;
  }
  // Scratch: [0, n) the rotated blocks, then a pack area and an unpack area of n/2 blocks each.
  const int half = n / 2;
  const size_t rotated = 0;
  const size_t packOut = static_cast<size_t>(n) * block;
  const size_t packIn = packOut + static_cast<size_t>(half) * block;
  schedule.scratchBytes = packIn + static_cast<size_t>(half) * block;
  // Rotate: scratch block i = send block (r + i) % n.
  schedule.steps.push_back({StepKind::Copy,
                            -1,
                            blocks(input, 0, r, n - r, block),
                            blocks(BufferKind::Scratch, rotated, 0, n - r, block),
                            {}});
  if (r > 0)
    schedule.steps.push_back(
        {StepKind::Copy, -1, blocks(input, 0, 0, r, block), blocks(BufferKind::Scratch, rotated, n - r, r, block), {}});
  for (int k = 1; k < n; k <<= 1) {
    // The blocks with bit k set come in runs of k: [k, 2k), [3k, 4k), ...
    std::vector<std::pair<int, int>> runs;  // (first block, blocks)
    int packed = 0;
    for (int first = k; first < n; first += 2 * k) {
      runs.push_back({first, std::min(k, n - first)});
      packed += runs.back().second;
    }
    int at = 0;
    for (auto [first, count] : runs) {
      schedule.steps.push_back({StepKind::Copy,
                                -1,
                                blocks(BufferKind::Scratch, rotated, first, count, block),
                                blocks(BufferKind::Scratch, packOut, at, count, block),
                                {}});
      at += count;
    }
    schedule.steps.push_back(
        {StepKind::Send, (r + k) % n, blocks(BufferKind::Scratch, packOut, 0, packed, block), {}, {}});
    schedule.steps.push_back(
        {StepKind::Recv, (r - k + n) % n, {}, blocks(BufferKind::Scratch, packIn, 0, packed, block), {}});
    at = 0;
    for (auto [first, count] : runs) {
      schedule.steps.push_back({StepKind::Copy,
                                -1,
                                blocks(BufferKind::Scratch, packIn, at, count, block),
                                blocks(BufferKind::Scratch, rotated, first, count, block),
                                {}});
      at += count;
    }
  }
  // Scratch block i now holds rank (r - i) % n's block for this rank: recv block (r - i) % n.
  for (int i = 0; i < n; ++i)
    schedule.steps.push_back({StepKind::Copy,
                              -1,
                              blocks(BufferKind::Scratch, rotated, i, 1, block),
                              blocks(BufferKind::Recv, 0, (r - i + n) % n, 1, block),
                              {}});
  return schedule;
}

}  // namespace weft
