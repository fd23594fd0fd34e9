// The tree, recursive halving-doubling and hierarchical all-reduce schedules (and ring and
// direct through the common entry point), run by the in-process simulator with real data:
// every element of every rank's result must be the sum of every rank's input exactly once
// (inputs are distinct 64-bit values, so a missing or doubled contribution shows), and for
// an average divided exactly once. Ranks 1..64 and 96, 128, 255, 256, 1000, 1024; counts 0, 1,
// below the rank count, odd; in and out of place.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "algorithms/builders/hierarchical_allreduce.h"
#include "algorithms/builders/rhd_allreduce.h"
#include "algorithms/builders/tree_allreduce.h"
#include "algorithms/cost/algorithm_selection.h"
#include "algorithms/simulation/simulator.h"

using namespace weft;

namespace {

uint64_t inputValue(int rank, size_t i) {
  uint64_t x = (static_cast<uint64_t>(rank) << 32) ^ (i * 0x9E3779B97F4A7C15ull) ^ 0xD1B54A32D192ED03ull;
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  return x ^ (x >> 32);
}

// Node-major layout of n ranks, `perNode` on each (the last node takes the remainder);
// `interleaved`: rank r on node r % nNodes, as a launcher that deals ranks round robin.
std::vector<std::vector<int>> makeNodes(int n, int perNode, bool interleaved = false) {
  std::vector<std::vector<int>> nodes;
  int nNodes = (n + perNode - 1) / perNode;
  nodes.resize(nNodes);
  for (int r = 0; r < n; ++r) nodes[interleaved ? r % nNodes : r / perNode].push_back(r);
  return nodes;
}

std::vector<int> nodeMajor(const std::vector<std::vector<int>>& nodes) {
  std::vector<int> order;
  for (const auto& node : nodes) order.insert(order.end(), node.begin(), node.end());
  return order;
}

// Runs `algorithm` on n ranks; returns "" or the first failure.
// `inPlaceEvery`: with inPlace, only ranks r with r % inPlaceEvery == 0 are in place (the
// others out of place in the same call, as NCCL allows).
std::string check(Algorithm algorithm, int n, size_t count, bool inPlace, bool average,
                  const std::vector<std::vector<int>>& nodes, int channels = 1, int inPlaceEvery = 1,
                  size_t pieceChunkBytes = 0) {
  AllReduceShape shape{.count = count,
                       .elementSize = 8,
                       .nranks = n,
                       .order = nodeMajor(nodes),
                       .nodes = nodes,
                       .average = average,
                       .channels = channels,
                       .pieceChunkBytes = pieceChunkBytes};
  std::vector<Schedule> schedules;
  for (int r = 0; r < n; ++r) {
    shape.rank = r;
    schedules.push_back(buildAllReduceSchedule(algorithm, shape));
    if (schedules.back().divisor != static_cast<uint64_t>(n) && !(n == 1))
      return "divisor " + std::to_string(schedules.back().divisor);
  }
  // Sum: uint64 inputs (wrapping). Average: small integers in double (exact sums).
  std::vector<std::vector<uint64_t>> send(n, std::vector<uint64_t>(count + 1)),
      recv(n, std::vector<uint64_t>(count + 1));
  std::vector<SimulatedBuffers> buffers(n);
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < count; ++i) {
      if (average) {
        double v = static_cast<double>((inputValue(r, i) % 4096) + 1);
        std::memcpy(&send[r][i], &v, 8);
      } else {
        send[r][i] = inputValue(r, i);
      }
      recv[r][i] = 0x5555555555555555ull;
    }
    buffers[r].send = reinterpret_cast<const char*>(send[r].data());
    const bool rankInPlace = inPlace && r % inPlaceEvery == 0;
    buffers[r].recv = rankInPlace ? reinterpret_cast<char*>(send[r].data()) : reinterpret_cast<char*>(recv[r].data());
    buffers[r].sendBytes = buffers[r].recvBytes = count * 8;
  }
  std::vector<uint64_t> expectSum(count, 0);
  std::vector<double> expectAvg(count, 0);
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i) {
      expectSum[i] += inputValue(r, i);
      expectAvg[i] += static_cast<double>((inputValue(r, i) % 4096) + 1);
    }
  SimulationOptions options;
  options.type = average ? ncclFloat64 : ncclUint64;
  SimulationResult result = simulate(schedules, buffers, options);
  if (!result.ok) return result.error;
  for (int r = 0; r < n; ++r) {
    const uint64_t* out = reinterpret_cast<const uint64_t*>(buffers[r].recv);
    for (size_t i = 0; i < count; ++i) {
      if (average) {
        double got;
        std::memcpy(&got, &out[i], 8);
        double want = expectAvg[i] / n;
        if (std::fabs(got - want) > 1e-9 * std::fabs(want))
          return "rank " + std::to_string(r) + " element " + std::to_string(i) + ": avg " + std::to_string(got) +
                 ", expected " + std::to_string(want);
      } else if (out[i] != expectSum[i]) {
        return "rank " + std::to_string(r) + " element " + std::to_string(i) + ": wrong sum";
      }
    }
  }
  return "";
}

const Algorithm kMine[] = {Algorithm::Tree, Algorithm::Rhd, Algorithm::Hier, Algorithm::Doubling};

int perNodeFor(int n) { return n % 8 == 0 ? 8 : n % 4 == 0 ? 4 : n % 2 == 0 ? 2 : 1; }

TEST(AllReduceAlgorithms, CorrectFor1To64Ranks) {
  for (int n = 1; n <= 64; ++n)
    for (size_t count : {size_t(0), size_t(1), size_t(n > 1 ? n - 1 : 0), size_t(n), size_t(2 * n + 1), size_t(97)})
      for (bool inPlace : {false, true})
        for (Algorithm a : kMine) {
          bool average = (n + count) % 2 == 1;
          std::string error = check(a, n, count, inPlace, average, makeNodes(n, perNodeFor(n)));
          ASSERT_EQ(error, "") << algorithmName(a) << " n=" << n << " count=" << count << (inPlace ? " in place" : "")
                               << (average ? " avg" : " sum");
        }
}

// The ring on several channels (algorithms/builders/channels.h): each channel's part on its own rotated
// ring, all interleaved in one schedule; counts below the channel count leave channels empty.
TEST(AllReduceAlgorithms, RingChannelsCorrectFor1To64Ranks) {
  for (int n = 1; n <= 64; ++n)
    for (int channels : {2, 3, 8})
      for (size_t count : {size_t(0), size_t(1), size_t(channels - 1), size_t(n), size_t(3 * n * channels + 5)})
        for (bool inPlace : {false, true}) {
          bool average = (n + count + channels) % 2 == 1;
          std::string error =
              check(Algorithm::Ring, n, count, inPlace, average, makeNodes(n, perNodeFor(n), n % 3 == 0), channels);
          ASSERT_EQ(error, "") << "ring x" << channels << " n=" << n << " count=" << count
                               << (inPlace ? " in place" : "") << (average ? " avg" : " sum");
        }
}

// The ring in pieces (algorithms/builders/pieces.h): consecutive whole ring all-reduces over
// spans of n chunks of pieceChunkBytes (8-byte elements here: 1, 3 and 5 per chunk), alone and
// on channels; counts that fit one piece, fill pieces exactly, and leave a short last piece.
// Rank counts up to 64, odd and even (every count would take half a minute; the pieces' code
// does not depend on n beyond the piece size).
TEST(AllReduceAlgorithms, RingInPiecesCorrect) {
  for (int n : {1, 2, 3, 4, 5, 8, 13, 64})
    for (size_t chunkElements : {size_t(1), size_t(3), size_t(5)})
      for (int channels : {1, 3}) {
        const size_t piece = chunkElements * static_cast<size_t>(n);
        for (size_t count : {size_t(1), piece, piece + 1, 3 * piece, 4 * piece * channels + 7})
          for (bool inPlace : {false, true}) {
            bool average = (n + count + chunkElements) % 2 == 1;
            std::string error = check(Algorithm::Ring, n, count, inPlace, average, makeNodes(n, perNodeFor(n)),
                                      channels, 1, chunkElements * 8);
            ASSERT_EQ(error, "") << "ring in pieces of " << chunkElements << " x " << n << " on " << channels
                                 << " channels, count=" << count << (inPlace ? " in place" : "")
                                 << (average ? " avg" : " sum");
          }
      }
}

TEST(AllReduceAlgorithms, CorrectForLargeRankCountsWithSmallCounts) {
  for (int n : {96, 128, 255, 256, 1000, 1024})
    for (size_t count : {size_t(0), size_t(1), size_t(n / 3), size_t(2 * n + 1)})
      for (Algorithm a : kMine) {
        bool inPlace = count % 2 == 1;
        bool average = n % 2 == 0 && count > 1;
        std::string error = check(a, n, count, inPlace, average, makeNodes(n, 8));
        ASSERT_EQ(error, "") << algorithmName(a) << " n=" << n << " count=" << count;
      }
}

TEST(AllReduceAlgorithms, AverageAndSumBothWaysAtEveryCountBelowTheRankCount) {
  const int n = 12;
  for (size_t count = 0; count <= 13; ++count)
    for (bool inPlace : {false, true})
      for (bool average : {false, true})
        for (Algorithm a : kMine)
          ASSERT_EQ(check(a, n, count, inPlace, average, makeNodes(n, 4)), "")
              << algorithmName(a) << " count=" << count << " inPlace=" << inPlace << " avg=" << average;
}

TEST(AllReduceAlgorithms, RingAndDirectThroughTheCommonEntryPoint) {
  for (int n : {1, 2, 3, 7, 8})
    for (size_t count : {size_t(0), size_t(1), size_t(n + 2)}) {
      EXPECT_EQ(check(Algorithm::Ring, n, count, false, true, makeNodes(n, n)), "") << n;
    }
  // Direct: every rank writes its chunk into every rank's receive buffer; some ranks in place
  // and others not (inPlaceEvery 2) is the case where a peer's send and receive alias unseen.
  for (int n : {1, 2, 3, 4, 7})
    for (size_t count : {size_t(0), size_t(1), size_t(n + 2), size_t(97)})
      for (bool inPlace : {false, true})
        for (int inPlaceEvery : {1, 2})
          for (bool average : {false, true})
            EXPECT_EQ(check(Algorithm::Direct, n, count, inPlace, average, makeNodes(n, n), 1, inPlaceEvery), "")
                << "direct n=" << n << " count=" << count << " inPlace=" << inPlace << "/" << inPlaceEvery
                << " avg=" << average;
}

TEST(DirectAllReduce, TwoRanksSumInOnePassThenOneBarrier) {
  // The sum of chunk r goes to both receive buffers from the one step that reads the inputs,
  // so no result is read back from memory; the notify and its wait are the only other steps.
  for (int r : {0, 1}) {
    Schedule s = buildAllReduceSchedule(Algorithm::Direct, AllReduceShape{.count = 1000,
                                                                          .elementSize = 4,
                                                                          .rank = r,
                                                                          .nranks = 2,
                                                                          .order = {0, 1},
                                                                          .nodes = {},
                                                                          .average = false,
                                                                          .channels = 1});
    ASSERT_EQ(s.steps.size(), 3u) << s.toString();
    const Step& pass = s.steps[0];
    EXPECT_EQ(pass.kind, StepKind::Reduce);
    EXPECT_EQ(pass.dst, (BufferRange{BufferKind::Recv, r * 2000u, 2000, -1}));
    EXPECT_EQ(pass.dst2, (BufferRange{BufferKind::Recv, r * 2000u, 2000, 1 - r}));
    EXPECT_EQ(pass.src2, (BufferRange{BufferKind::Send, r * 2000u, 2000, 1 - r}));
    EXPECT_EQ(s.steps[1].kind, StepKind::Notify);
    EXPECT_EQ(s.steps[2].kind, StepKind::WaitNotify);
  }
}

TEST(HierarchicalAllReduce, InterleavedAndUnevenNodes) {
  // Ranks dealt round robin across nodes: rails and node rings follow the layout, not rank ids.
  for (int n : {4, 6, 16, 24})
    for (size_t count : {size_t(1), size_t(5), size_t(3 * n + 1)})
      for (bool inPlace : {false, true})
        for (Algorithm a : kMine)
          ASSERT_EQ(check(a, n, count, inPlace, true, makeNodes(n, n / 2, true)), "")
              << algorithmName(a) << " n=" << n << " count=" << count;
  // Uneven nodes (3 + 5 ranks; 8 + 8 + 1): the documented fallback, a ring in node order.
  std::vector<std::vector<int>> uneven = {{0, 1, 2}, {3, 4, 5, 6, 7}};
  EXPECT_FALSE(nodesAreUniform(uneven));
  for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(40)})
    EXPECT_EQ(check(Algorithm::Hier, 8, count, count % 2, true, uneven), "") << count;
  EXPECT_EQ(check(Algorithm::Hier, 17, 50, false, false, makeNodes(17, 8)), "");
}

TEST(HierarchicalAllReduce, OnlyRailPeersCrossNodes) {
  auto nodes = makeNodes(32, 8);
  for (int r = 0; r < 32; ++r) {
    Schedule s = buildHierarchicalAllReduce({.count = 1000, .elementSize = 4, .rank = r, .nodes = nodes});
    for (const Step& step : s.steps)
      if (step.peer >= 0 && step.peer / 8 != r / 8) {
        EXPECT_EQ(step.peer % 8, r % 8) << "rank " << r << " talks to " << step.peer;
      }
  }
}

TEST(TreeAllReduce, TreesAreSpanningAndComplementary) {
  for (int n = 1; n <= 300; ++n) {
    for (int t = 0; t < 2; ++t) {
      int roots = 0;
      for (int p = 0; p < n; ++p) {
        TreeLinks links = doubleBinaryTree(n, p, t);
        EXPECT_LE(links.children.size(), 2u);
        if (links.parent < 0)
          ++roots;
        else {
          TreeLinks up = doubleBinaryTree(n, links.parent, t);
          EXPECT_EQ(std::count(up.children.begin(), up.children.end(), p), 1)
              << "n=" << n << " tree " << t << " p=" << p;
        }
        for (int c : links.children) EXPECT_EQ(doubleBinaryTree(n, c, t).parent, p);
      }
      EXPECT_EQ(roots, 1) << "n=" << n;
      // The cost model's closed form for the depth.
      if (n > 1) {
        int k = 0;
        while ((2 << k) <= n - 1) ++k;
        EXPECT_EQ(doubleBinaryTreeDepth(n, t), k + 1) << "n=" << n << " tree " << t;
      }
    }
    // Complementary: for even n no rank is a leaf in both trees (odd n: at most one).
    if (n >= 4) {
      int leafInBoth = 0;
      for (int p = 0; p < n; ++p)
        leafInBoth += doubleBinaryTree(n, p, 0).children.empty() && doubleBinaryTree(n, p, 1).children.empty();
      EXPECT_LE(leafInBoth, n % 2 == 0 ? 0 : 1) << "n=" << n;
    }
  }
}

TEST(TreeAllReduce, EachRankSendsAtMostTheWholeBufferPerPhase) {
  // Bandwidth shape: every rank sends S/2 up each tree at most once, so at most S in the reduction.
  const size_t count = 1 << 10;
  for (int n : {2, 5, 8, 33}) {
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    for (int r = 0; r < n; ++r) {
      Schedule s = buildTreeAllReduce({.count = count, .elementSize = 4, .rank = r, .order = order});
      size_t sentUp = 0;
      for (const Step& step : s.steps)
        if (step.kind == StepKind::Send && step.src.buffer == BufferKind::Send) sentUp += step.src.bytes;
      EXPECT_LE(sentUp, count * 4);
      EXPECT_EQ(s.scratchBytes, 0u);  // partial sums accumulate in the receive buffer
    }
  }
}

TEST(RhdAllReduce, StepsAreLogarithmic) {
  std::vector<int> order(1024);
  std::iota(order.begin(), order.end(), 0);
  Schedule s = buildRhdAllReduce({.count = 1 << 20, .elementSize = 4, .rank = 5, .order = order, .average = true});
  EXPECT_EQ(s.steps.size(), 2u * 2 * 10 + 1);  // 10 halving + 10 doubling exchanges, one divide
  order.resize(1000);
  // An even rank that sits out.
  Schedule folded = buildRhdAllReduce({.count = 1 << 20, .elementSize = 4, .rank = 0, .order = order});
  EXPECT_EQ(folded.steps.size(), 2u);
}

}  // namespace
