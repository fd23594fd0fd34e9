#include "algorithms/builders/tree_allreduce.h"

#include <algorithm>

#include "algorithms/builders/split_evenly.h"

namespace weft {

TreeLinks binaryTree(int n, int rank) {
  TreeLinks links;
  if (n <= 1) return links;
  int bit = 1;
  while (bit < n && !(bit & rank)) bit <<= 1;
  if (rank == 0) {
    links.children.push_back(bit >> 1);  // the root has a single child: the highest power of two < n
    return links;
  }
  int up = (rank ^ bit) | (bit << 1);
  if (up >= n) up = rank ^ bit;
  links.parent = up;
  int low = bit >> 1;
  if (low == 0) return links;
  links.children.push_back(rank - low);
  int down = rank + low;
  while (low > 0 && down >= n) {
    low >>= 1;
    down = rank + low;
  }
  if (low > 0) links.children.push_back(down);
  return links;
}

TreeLinks doubleBinaryTree(int n, int position, int tree) {
  if (tree == 0 || n <= 1) return binaryTree(n, position);
  TreeLinks mapped;
  if (n % 2 == 1) {  // shift by one
    TreeLinks t = binaryTree(n, (position - 1 + n) % n);
    mapped.parent = t.parent < 0 ? -1 : (t.parent + 1) % n;
    for (int c : t.children) mapped.children.push_back((c + 1) % n);
  } else {  // mirror
    TreeLinks t = binaryTree(n, n - 1 - position);
    mapped.parent = t.parent < 0 ? -1 : n - 1 - t.parent;
    for (int c : t.children) mapped.children.push_back(n - 1 - c);
  }
  return mapped;
}

int doubleBinaryTreeDepth(int n, int tree) {
  int deepest = 0;
  for (int p = 0; p < n; ++p) {
    int depth = 0;
    for (int q = p; doubleBinaryTree(n, q, tree).parent >= 0 && depth <= n; q = doubleBinaryTree(n, q, tree).parent)
      ++depth;
    deepest = std::max(deepest, depth);
  }
  return deepest;
}

Schedule buildTreeAllReduce(const TreeAllReduceParams& p) {
  Schedule schedule;
  const int n = static_cast<int>(p.order.size());
  schedule.divisor = static_cast<uint64_t>(n);
  const size_t es = p.elementSize;
  if (n <= 1) {
    schedule.steps.push_back(
        {StepKind::Copy, -1, {BufferKind::Send, 0, p.count * es}, {BufferKind::Recv, 0, p.count * es}, {}});
    return schedule;
  }
  const int position = static_cast<int>(std::find(p.order.begin(), p.order.end(), p.rank) - p.order.begin());
  TreeLinks trees[2] = {doubleBinaryTree(n, position, 0), doubleBinaryTree(n, position, 1)};
  auto half = [&](BufferKind buffer, int tree) {
    ElementSpan span = splitEvenly(p.count, 2, tree);
    return BufferRange{buffer, span.begin * es, (span.end - span.begin) * es};
  };
  // Phases in one global order (reduce tree 0, reduce tree 1, broadcast tree 0, broadcast
  // tree 1) so that two ranks joined in both trees list their messages to each other in the
  // same order on both sides.
  for (int t = 0; t < 2; ++t) {
    if (half(BufferKind::Send, t).bytes == 0) continue;
    BufferRange accumulated = half(BufferKind::Send, t);
    for (int child : trees[t].children) {
      schedule.steps.push_back({StepKind::RecvReduce, p.order[child], accumulated, half(BufferKind::Recv, t), {}});
      accumulated = half(BufferKind::Recv, t);
    }
    if (trees[t].parent >= 0) {
      schedule.steps.push_back({StepKind::Send, p.order[trees[t].parent], accumulated, {}, {}});
    } else if (p.average) {
      schedule.steps.push_back({StepKind::Divide, -1, accumulated, half(BufferKind::Recv, t), {}});
    }
  }
  for (int t = 0; t < 2; ++t) {
    if (half(BufferKind::Send, t).bytes == 0) continue;
    if (trees[t].parent >= 0)
      schedule.steps.push_back({StepKind::Recv, p.order[trees[t].parent], {}, half(BufferKind::Recv, t), {}});
    for (int child : trees[t].children)
      schedule.steps.push_back({StepKind::Send, p.order[child], half(BufferKind::Recv, t), {}, {}});
  }
  return schedule;
}

}  // namespace weft
