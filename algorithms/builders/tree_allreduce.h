// Double binary tree all-reduce (as NCCL): two binary trees over the same ranks, the second the
// first mirrored (even n) or shifted by one (odd n), so that the leaves of one tree are interior
// nodes of the other and every rank sends and receives about the same amount in total. Each
// tree carries half of the buffer: its ranks reduce up the tree to the root (which divides for
// an average), then broadcast down. Steps name whole halves; the executor's slices pipeline
// them, so slice k travels up (and down) while slice k+1 is still arriving.
//
// Cost: about 2*depth*alpha + 2*S/B (depth ~ log2 n): the latency grows with log n, not n.
#pragma once

#include <cstddef>
#include <vector>

#include "algorithms/schedule.h"

namespace weft {

struct TreeAllReduceParams {
  size_t count = 0;        // elements
  size_t elementSize = 0;  // bytes per element
  int rank = 0;            // this rank's position is found in order
  std::vector<int> order;  // tree positions -> ranks (a permutation of 0..n-1; e.g. the
                           // layout's node-major ring order, so that subtrees stay on a node)
  bool average = false;    // the root of each tree divides its half by n, once
};

Schedule buildTreeAllReduce(const TreeAllReduceParams& params);

// One position's place in a tree over positions 0..n-1: parent (-1 at the root) and children.
struct TreeLinks {
  int parent = -1;
  std::vector<int> children;  // at most two
};

// NCCL's binary tree (ncclGetBtree): root 0 with one child, the rest by the lowest set bit.
TreeLinks binaryTree(int n, int position);
// tree 0: binaryTree; tree 1: its mirror (n even) or its shift by one (n odd).
TreeLinks doubleBinaryTree(int n, int position, int tree);
// The longest root-to-leaf path of tree `tree` (in edges).
int doubleBinaryTreeDepth(int n, int tree);

}  // namespace weft
