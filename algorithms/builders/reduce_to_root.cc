#include "algorithms/builders/reduce_to_root.h"

#include <algorithm>

namespace weft {

namespace {

// Builds one rank's part given the peers it receives from (in order) and the peer it sends to
// (-1 at the root): fold every child into an accumulator that starts as the local input.
Schedule foldAndForward(const ReduceParams& p, const std::vector<int>& children, int parent) {
  Schedule schedule;
  schedule.divisor = static_cast<uint64_t>(p.nranks);
  const size_t bytes = p.count * p.elementSize;
  if (bytes == 0) return schedule;
  const bool root = parent < 0;
  const BufferRange input{BufferKind::Send, 0, bytes};
  const BufferRange acc = root ? BufferRange{BufferKind::Recv, 0, bytes} : BufferRange{BufferKind::Scratch, 0, bytes};
  BufferRange operand = input;
  if (p.preScale) {
    schedule.steps.push_back({StepKind::Scale, -1, input, acc, {}});
    operand = acc;
  }
  for (int child : children) {
    schedule.steps.push_back({StepKind::RecvReduce, child, operand, acc, {}});
    operand = acc;
  }
  if (!root) {
    if (operand == acc) schedule.scratchBytes = bytes;
    schedule.steps.push_back({StepKind::Send, parent, operand, {}, {}});
    return schedule;
  }
  if (!(operand == acc)) schedule.steps.push_back({StepKind::Copy, -1, operand, acc, {}});
  if (p.average && p.nranks > 1) schedule.steps.push_back({StepKind::Divide, -1, acc, acc, {}});
  return schedule;
}

}  // namespace

Schedule buildChainReduce(const ReduceParams& p) {
  const std::vector<int> ring = orderOrIdentity(p.ringOrder, p.nranks);
  const int n = static_cast<int>(ring.size());
  const int rootPos = static_cast<int>(std::find(ring.begin(), ring.end(), p.root) - ring.begin());
  const int pos = static_cast<int>(std::find(ring.begin(), ring.end(), p.rank) - ring.begin());
  const int hop = (pos - rootPos + n) % n;  // the chain is root <- hop 1 <- hop 2 <- ... <- hop n-1
  std::vector<int> children;
  if (hop + 1 < n) children.push_back(ring[(pos + 1) % n]);
  ReduceParams q = p;
  q.nranks = n;
  return foldAndForward(q, children, hop == 0 ? -1 : ring[(pos + n - 1) % n]);
}

Schedule buildBinomialReduce(const ReduceParams& p) {
  const int n = p.nranks;
  const int v = (p.rank - p.root + n) % n;
  auto actual = [&](int relative) { return (relative + p.root) % n; };
  std::vector<int> children;
  int parent = -1;
  for (int mask = 1; mask < n; mask <<= 1) {
    if (v & mask) {
      parent = actual(v - mask);
      break;
    }
    if (v + mask < n) children.push_back(actual(v + mask));
  }
  return foldAndForward(p, children, parent);
}

}  // namespace weft
