// Every collective schedule builder, run by the simulator with real data for 1..64 ranks and
// {96, 128, 255, 256}: counts 0, 1, below and above the rank count, every root for small rank
// counts, in and out of place, checked against a reference computed directly (integers, so sums
// are exact; the reference sums in double).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "algorithms/builders/allgather.h"
#include "algorithms/builders/alltoall.h"
#include "algorithms/builders/broadcast.h"
#include "algorithms/builders/direct_collectives.h"
#include "algorithms/builders/gather_scatter.h"
#include "algorithms/builders/point_to_point.h"
#include "algorithms/builders/reduce_scatter.h"
#include "algorithms/builders/reduce_to_root.h"
#include "algorithms/simulation/simulator.h"

using namespace weft;

namespace {

std::vector<int> rankCounts() {
  std::vector<int> counts;
  for (int n = 1; n <= 64; ++n) counts.push_back(n);
  for (int n : {96, 128, 255, 256}) counts.push_back(n);
  return counts;
}

// Element counts per rank: small ones only for big communicators, whose data grows with n^2.
std::vector<size_t> elementCounts(int n, bool quadratic) {
  if (n > 64 || (quadratic && n > 24)) return {0, 1, 3};
  std::vector<size_t> counts = {0, 1, 7};
  if (n > 2) counts.push_back(static_cast<size_t>(n - 1));
  counts.push_back(static_cast<size_t>(2 * n + 1));
  return counts;
}

std::vector<int> roots(int n) {
  if (n <= 8) {
    std::vector<int> all(n);
    std::iota(all.begin(), all.end(), 0);
    return all;
  }
  return {0, n / 2, n - 1};
}

// Values are small integers stored as int32 or double; `Typed` reads and writes them.
struct Typed {
  ncclDataType_t type;
  size_t size() const { return type == ncclInt32 ? 4 : 8; }
  double get(const char* base, size_t i) const {
    if (type == ncclInt32) {
      int32_t v;
      memcpy(&v, base + i * 4, 4);
      return v;
    }
    double v;
    memcpy(&v, base + i * 8, 8);
    return v;
  }
  void put(char* base, size_t i, double value) const {
    if (type == ncclInt32) {
      int32_t v = static_cast<int32_t>(value);
      memcpy(base + i * 4, &v, 4);
    } else {
      memcpy(base + i * 8, &value, 8);
    }
  }
  std::vector<char> scalar(double value) const {
    std::vector<char> bytes(size());
    put(bytes.data(), 0, value);
    return bytes;
  }
};

std::mt19937& rng() {
  static std::mt19937 generator(12345);
  return generator;
}

// Per rank: `elements` random values; what each rank contributes.
std::vector<std::vector<double>> randomInputs(int n, size_t elements) {
  std::uniform_int_distribution<int> value(-50, 50);
  std::vector<std::vector<double>> inputs(n, std::vector<double>(elements));
  for (auto& input : inputs)
    for (double& v : input) v = value(rng());
  return inputs;
}

// One rank's memory: a send and a recv allocation, or one allocation both point into.
struct RankMemory {
  std::vector<char> sendStorage, recvStorage;
  SimulatedBuffers buffers;
};

// Lays out rank memory: `sendElems` and `recvElems` (0: none); when `aliasAt` >= 0 the smaller of
// the two lives inside the larger, starting at element `aliasAt` of it (NCCL's in-place layouts).
void layout(RankMemory& m, const Typed& t, size_t sendElems, size_t recvElems, long aliasAt) {
  const size_t es = t.size();
  // Fill with a pattern that no reference value has, so an unwritten element is caught.
  if (aliasAt < 0) {
    m.sendStorage.assign(sendElems * es + 1, 0);
    m.recvStorage.assign(recvElems * es + 1, 0);
    for (size_t i = 0; i < recvElems; ++i) t.put(m.recvStorage.data(), i, 999);
    m.buffers.send = sendElems ? m.sendStorage.data() : nullptr;
    m.buffers.recv = recvElems ? m.recvStorage.data() : nullptr;
  } else {
    const size_t big = std::max(sendElems, recvElems);
    m.recvStorage.assign(big * es + 1, 0);
    for (size_t i = 0; i < big; ++i) t.put(m.recvStorage.data(), i, 999);
    char* base = m.recvStorage.data();
    m.buffers.send = sendElems >= recvElems ? base : base + aliasAt * es;
    m.buffers.recv = sendElems >= recvElems ? base + aliasAt * es : base;
  }
  m.buffers.sendBytes = sendElems * es;
  m.buffers.recvBytes = recvElems * es;
}

SimulationResult simulateAll(const std::vector<Schedule>& schedules, std::vector<RankMemory>& memory, const Typed& t,
                             ReduceOp op = ReduceOp::Sum, std::vector<std::vector<char>> scalars = {}) {
  std::vector<SimulatedBuffers> buffers;
  for (auto& m : memory) buffers.push_back(m.buffers);
  SimulationOptions options;
  options.type = t.type;
  options.op = op;
  options.scalars = std::move(scalars);
  return simulate(schedules, buffers, options);
}

std::string label(const char* what, int n, size_t count, int root, bool inPlace, const Typed& t) {
  return std::string(what) + " n=" + std::to_string(n) + " count=" + std::to_string(count) +
         " root=" + std::to_string(root) + (inPlace ? " in place" : " out of place") +
         (t.type == ncclInt32 ? " int32" : " double");
}

std::vector<int> shuffledRing(int n) {
  std::vector<int> ring(n);
  std::iota(ring.begin(), ring.end(), 0);
  std::shuffle(ring.begin(), ring.end(), rng());
  return ring;
}

// ---------------------------------------------------------------------------------------------

// Nodes for the hierarchical schedules: equal nodes of 4, 3 or 2 ranks when n allows (ranks
// shuffled across nodes for some n), otherwise two uneven nodes (the ring fallback).
std::vector<std::vector<int>> testNodes(int n) {
  std::vector<int> ranks(n);
  std::iota(ranks.begin(), ranks.end(), 0);
  if (n % 5 == 0) std::shuffle(ranks.begin(), ranks.end(), rng());
  int size = n % 4 == 0 && n >= 8 ? 4 : n % 3 == 0 ? 3 : n % 2 == 0 ? 2 : (n + 1) / 2;
  std::vector<std::vector<int>> nodes;
  for (int first = 0; first < n; first += size)
    nodes.emplace_back(ranks.begin() + first, ranks.begin() + std::min(n, first + size));
  return nodes;
}

enum class GatherAlgorithm { Ring, RingChannels, Bruck, RecursiveDoubling, Hierarchical, Direct };
const char* gatherName(GatherAlgorithm a) {
  switch (a) {
    case GatherAlgorithm::Ring: return "ring allgather";
    case GatherAlgorithm::RingChannels: return "ring allgather on 3 channels";
    case GatherAlgorithm::Bruck: return "bruck allgather";
    case GatherAlgorithm::RecursiveDoubling: return "recursive doubling allgather";
    case GatherAlgorithm::Hierarchical: return "hierarchical allgather";
    case GatherAlgorithm::Direct: return "direct allgather";
  }
  return "?";
}

void checkAllGather(int n, size_t count, bool inPlace, GatherAlgorithm algorithm, const Typed& t) {
  const std::string what = label(gatherName(algorithm), n, count, 0, inPlace, t);
  auto inputs = randomInputs(n, count);
  std::vector<int> ring = n % 2 ? shuffledRing(n) : std::vector<int>{};
  std::vector<std::vector<int>> nodes = testNodes(n);
  std::vector<RankMemory> memory(n);
  std::vector<Schedule> schedules;
  for (int r = 0; r < n; ++r) {
    layout(memory[r], t, count, n * count, inPlace ? static_cast<long>(r * count) : -1);
    for (size_t i = 0; i < count; ++i) t.put(const_cast<char*>(memory[r].buffers.send), i, inputs[r][i]);
    const AllGatherParams p{.count = count,
                            .elementSize = t.size(),
                            .rank = r,
                            .nranks = n,
                            .ringOrder = ring,
                            .inPlace = inPlace,
                            .nodes = nodes,
                            .channels = algorithm == GatherAlgorithm::RingChannels ? 3 : 1};
    switch (algorithm) {
      case GatherAlgorithm::Ring:
      case GatherAlgorithm::RingChannels: schedules.push_back(buildRingAllGather(p)); break;
      case GatherAlgorithm::Bruck: schedules.push_back(buildBruckAllGather(p)); break;
      case GatherAlgorithm::RecursiveDoubling: schedules.push_back(buildRecursiveDoublingAllGather(p)); break;
      case GatherAlgorithm::Hierarchical: schedules.push_back(buildHierarchicalAllGather(p)); break;
      case GatherAlgorithm::Direct:
        schedules.push_back(buildDirectAllGather({.count = count, .elementSize = t.size(), .rank = r, .nranks = n}));
        break;
    }
  }
  SimulationResult result = simulateAll(schedules, memory, t);
  ASSERT_TRUE(result.ok) << what << ": " << result.error;
  for (int r = 0; r < n; ++r)
    for (int q = 0; q < n; ++q)
      for (size_t i = 0; i < count; ++i)
        ASSERT_EQ(t.get(memory[r].buffers.recv, q * count + i), inputs[q][i])
            << what << " rank " << r << " block " << q;
}

TEST(CollectiveSchedules, AllGatherEveryAlgorithm) {
  for (int n : rankCounts())
    for (size_t count : elementCounts(n, true))
      for (bool inPlace : {false, true})
        for (GatherAlgorithm algorithm :
             {GatherAlgorithm::Ring, GatherAlgorithm::RingChannels, GatherAlgorithm::Bruck,
              GatherAlgorithm::RecursiveDoubling, GatherAlgorithm::Hierarchical, GatherAlgorithm::Direct}) {
          // Channels multiply the steps (and the in-place hazard checks): up to 24 ranks; the
          // direct schedule has n steps per rank (one host's ranks): up to 64.
          if (algorithm == GatherAlgorithm::RingChannels && n > 24) continue;
          if (algorithm == GatherAlgorithm::Direct && n > 64) continue;
          checkAllGather(n, count, inPlace, algorithm, Typed{n % 2 ? ncclInt32 : ncclFloat64});
          if (HasFatalFailure()) return;
        }
}

enum class ScatterAlgorithm { Ring, RingChannels, RecursiveHalving, Hierarchical, Direct };

void checkReduceScatter(int n, size_t count, bool inPlace, bool average, bool preScale, ScatterAlgorithm algorithm,
                        const Typed& t) {
  const char* name = algorithm == ScatterAlgorithm::Ring               ? "ring reducescatter"
                     : algorithm == ScatterAlgorithm::RingChannels     ? "ring reducescatter on 3 channels"
                     : algorithm == ScatterAlgorithm::RecursiveHalving ? "recursive halving reducescatter"
                     : algorithm == ScatterAlgorithm::Direct           ? "direct reducescatter"
                                                                       : "hierarchical reducescatter";
  const std::string what = label((std::string(name) + (preScale  ? " premulsum"
                                                       : average ? " avg"
                                                                 : ""))
                                     .c_str(),
                                 n, count, 0, inPlace, t);
  auto inputs = randomInputs(n, n * count);
  std::vector<double> scalar(n);
  std::vector<std::vector<char>> scalars;
  for (int r = 0; r < n; ++r) {
    scalar[r] = preScale ? 1 + r % 3 : 1;
    scalars.push_back(t.scalar(scalar[r]));
  }
  std::vector<int> ring = n % 3 == 1 ? shuffledRing(n) : std::vector<int>{};
  const std::vector<std::vector<int>> nodes = testNodes(n);
  std::vector<RankMemory> memory(n);
  std::vector<Schedule> schedules;
  for (int r = 0; r < n; ++r) {
    layout(memory[r], t, n * count, count, inPlace ? static_cast<long>(r * count) : -1);
    for (size_t i = 0; i < n * count; ++i) t.put(const_cast<char*>(memory[r].buffers.send), i, inputs[r][i]);
    const ReduceScatterParams p{.recvCount = count,
                                .elementSize = t.size(),
                                .rank = r,
                                .nranks = n,
                                .ringOrder = ring,
                                .average = average,
                                .preScale = preScale,
                                .inPlace = inPlace,
                                .nodes = nodes,
                                .channels = algorithm == ScatterAlgorithm::RingChannels ? 3 : 1};
    const DirectParams direct{.count = count, .elementSize = t.size(), .rank = r, .nranks = n, .average = average};
    schedules.push_back(algorithm == ScatterAlgorithm::Ring || algorithm == ScatterAlgorithm::RingChannels
                            ? buildRingReduceScatter(p)
                        : algorithm == ScatterAlgorithm::RecursiveHalving ? buildRecursiveHalvingReduceScatter(p)
                        : algorithm == ScatterAlgorithm::Direct           ? buildDirectReduceScatter(direct)
                                                                          : buildHierarchicalReduceScatter(p));
  }
  std::vector<std::vector<char>> before;
  for (auto& m : memory) before.emplace_back(m.buffers.send, m.buffers.send + m.buffers.sendBytes);
  SimulationResult result = simulateAll(schedules, memory, t, ReduceOp::Sum, scalars);
  ASSERT_TRUE(result.ok) << what << ": " << result.error;
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < count; ++i) {
      double sum = 0;
      for (int q = 0; q < n; ++q) sum += scalar[q] * inputs[q][r * count + i];
      double expected = average ? std::trunc(sum / n) : sum;
      if (average && t.type == ncclFloat64) expected = sum / n;
      ASSERT_EQ(t.get(memory[r].buffers.recv, i), expected) << what << " rank " << r << " element " << i;
    }
    if (!inPlace && !before[r].empty()) {  // the user's send buffer is never written
      ASSERT_EQ(0, memcmp(before[r].data(), memory[r].buffers.send, before[r].size())) << what << " rank " << r;
    }
  }
}

TEST(CollectiveSchedules, ReduceScatterEveryAlgorithm) {
  for (int n : rankCounts())
    for (size_t count : elementCounts(n, true))
      for (bool inPlace : {false, true})
        for (int variant = 0; variant < 3; ++variant)
          for (ScatterAlgorithm algorithm :
               {ScatterAlgorithm::Ring, ScatterAlgorithm::RingChannels, ScatterAlgorithm::RecursiveHalving,
                ScatterAlgorithm::Hierarchical, ScatterAlgorithm::Direct}) {
            if (algorithm == ScatterAlgorithm::RingChannels && n > 24) continue;              // as for all-gather
            if (algorithm == ScatterAlgorithm::Direct && (n > 64 || variant == 2)) continue;  // no PreMulSum
            checkReduceScatter(n, count, inPlace, variant == 1, variant == 2, algorithm,
                               Typed{n % 2 ? ncclInt32 : ncclFloat64});
            if (HasFatalFailure()) return;
          }
}

enum class RootedAlgorithm { Chain, Binomial, Direct };
const char* rootedName(RootedAlgorithm a, bool reduce) {
  switch (a) {
    case RootedAlgorithm::Chain: return reduce ? "chain reduce" : "chain broadcast";
    case RootedAlgorithm::Binomial: return reduce ? "binomial reduce" : "binomial broadcast";
    case RootedAlgorithm::Direct: return reduce ? "direct reduce" : "direct broadcast";
  }
  return "?";
}

void checkBroadcast(int n, size_t count, int root, bool inPlace, RootedAlgorithm algorithm, const Typed& t) {
  const bool chain = algorithm == RootedAlgorithm::Chain;
  const std::string what = label(rootedName(algorithm, false), n, count, root, inPlace, t);
  auto inputs = randomInputs(1, count);
  std::vector<int> ring = chain && n % 2 ? shuffledRing(n) : std::vector<int>{};
  std::vector<RankMemory> memory(n);
  std::vector<Schedule> schedules;
  for (int r = 0; r < n; ++r) {
    layout(memory[r], t, count, count, inPlace ? 0 : -1);
    if (r == root)
      for (size_t i = 0; i < count; ++i) t.put(const_cast<char*>(memory[r].buffers.send), i, inputs[0][i]);
    const BroadcastParams p{
        .count = count, .elementSize = t.size(), .rank = r, .nranks = n, .root = root, .ringOrder = ring};
    schedules.push_back(
        chain ? buildChainBroadcast(p)
        : algorithm == RootedAlgorithm::Binomial
            ? buildBinomialBroadcast(p)
            : buildDirectBroadcast({.count = count, .elementSize = t.size(), .rank = r, .nranks = n, .root = root}));
  }
  SimulationResult result = simulateAll(schedules, memory, t);
  ASSERT_TRUE(result.ok) << what << ": " << result.error;
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i)
      ASSERT_EQ(t.get(memory[r].buffers.recv, i), inputs[0][i]) << what << " rank " << r << " element " << i;
}

TEST(CollectiveSchedules, BroadcastChainBinomialAndDirect) {
  for (int n : rankCounts())
    for (size_t count : elementCounts(n, false))
      for (int root : roots(n))
        for (bool inPlace : {false, true})
          for (RootedAlgorithm algorithm :
               {RootedAlgorithm::Chain, RootedAlgorithm::Binomial, RootedAlgorithm::Direct}) {
            checkBroadcast(n, count, root, inPlace, algorithm, Typed{root % 2 ? ncclInt32 : ncclFloat64});
            if (HasFatalFailure()) return;
          }
}

void checkReduce(int n, size_t count, int root, bool inPlace, RootedAlgorithm algorithm, int variant, const Typed& t) {
  const bool chain = algorithm == RootedAlgorithm::Chain;
  const bool average = variant == 1, preScale = variant == 2;
  const std::string what = label(rootedName(algorithm, true), n, count, root, inPlace, t) + (average    ? " avg"
                                                                                             : preScale ? " premulsum"
                                                                                             : variant == 3 ? " max"
                                                                                                            : "");
  const ReduceOp op = variant == 3 ? ReduceOp::Max : ReduceOp::Sum;
  auto inputs = randomInputs(n, count);
  std::vector<double> scalar(n, 1);
  std::vector<std::vector<char>> scalars;
  for (int r = 0; r < n; ++r) {
    if (preScale) scalar[r] = (r % 4) - 1;
    scalars.push_back(t.scalar(scalar[r]));
  }
  std::vector<int> ring = chain && n % 2 ? shuffledRing(n) : std::vector<int>{};
  std::vector<RankMemory> memory(n);
  std::vector<Schedule> schedules;
  for (int r = 0; r < n; ++r) {
    // Non-root ranks have no recv buffer at all.
    layout(memory[r], t, count, r == root ? count : 0, inPlace && r == root ? 0 : -1);
    for (size_t i = 0; i < count; ++i) t.put(const_cast<char*>(memory[r].buffers.send), i, inputs[r][i]);
    const ReduceParams p{.count = count,
                         .elementSize = t.size(),
                         .rank = r,
                         .nranks = n,
                         .root = root,
                         .ringOrder = ring,
                         .average = average,
                         .preScale = preScale};
    const DirectParams direct{
        .count = count, .elementSize = t.size(), .rank = r, .nranks = n, .root = root, .average = average};
    schedules.push_back(chain                                    ? buildChainReduce(p)
                        : algorithm == RootedAlgorithm::Binomial ? buildBinomialReduce(p)
                                                                 : buildDirectReduce(direct));
  }
  std::vector<std::vector<char>> before;
  for (auto& m : memory) before.emplace_back(m.buffers.send, m.buffers.send + m.buffers.sendBytes);
  SimulationResult result = simulateAll(schedules, memory, t, op, scalars);
  ASSERT_TRUE(result.ok) << what << ": " << result.error;
  for (size_t i = 0; i < count; ++i) {
    double acc = op == ReduceOp::Max ? -1e300 : 0;
    for (int q = 0; q < n; ++q)
      acc = op == ReduceOp::Max ? std::max(acc, inputs[q][i]) : acc + scalar[q] * inputs[q][i];
    if (average) acc = t.type == ncclFloat64 ? acc / n : std::trunc(acc / n);
    ASSERT_EQ(t.get(memory[root].buffers.recv, i), acc) << what << " element " << i;
  }
  for (int r = 0; r < n; ++r)
    if (!(inPlace && r == root) && !before[r].empty()) {  // memcmp takes no null, even for 0 bytes
      ASSERT_EQ(0, memcmp(before[r].data(), memory[r].buffers.send, before[r].size())) << what << " rank " << r;
    }
}

TEST(CollectiveSchedules, ReduceChainBinomialAndDirect) {
  for (int n : rankCounts())
    for (size_t count : elementCounts(n, false))
      for (int root : roots(n))
        for (bool inPlace : {false, true})
          for (RootedAlgorithm algorithm :
               {RootedAlgorithm::Chain, RootedAlgorithm::Binomial, RootedAlgorithm::Direct}) {
            int variant = static_cast<int>((n + root + count) % 4);
            if (algorithm == RootedAlgorithm::Direct && variant == 2) variant = 1;  // no PreMulSum: average instead
            checkReduce(n, count, root, inPlace, algorithm, variant, Typed{n % 2 ? ncclInt32 : ncclFloat64});
            if (HasFatalFailure()) return;
          }
}

enum class AllToAllAlgorithm { Pairwise, Bruck, Direct };
const char* allToAllName(AllToAllAlgorithm a) {
  switch (a) {
    case AllToAllAlgorithm::Pairwise: return "pairwise alltoall";
    case AllToAllAlgorithm::Bruck: return "bruck alltoall";
    case AllToAllAlgorithm::Direct: return "direct alltoall";
  }
  return "?";
}

// Runs the all-to-all; *right says whether every block landed where it should.
void runAllToAll(int n, size_t count, bool inPlace, AllToAllAlgorithm algorithm, const Typed& t, bool* right) {
  const std::string what = label(allToAllName(algorithm), n, count, 0, inPlace, t);
  auto inputs = randomInputs(n, n * count);
  std::vector<RankMemory> memory(n);
  std::vector<Schedule> schedules;
  for (int r = 0; r < n; ++r) {
    layout(memory[r], t, n * count, n * count, inPlace ? 0 : -1);
    for (size_t i = 0; i < n * count; ++i) t.put(const_cast<char*>(memory[r].buffers.send), i, inputs[r][i]);
    const AllToAllParams p{.count = count, .elementSize = t.size(), .rank = r, .nranks = n, .inPlace = inPlace};
    schedules.push_back(algorithm == AllToAllAlgorithm::Bruck ? buildBruckAllToAll(p)
                        : algorithm == AllToAllAlgorithm::Pairwise
                            ? buildPairwiseAllToAll(p)
                            : buildDirectAllToAll({.count = count, .elementSize = t.size(), .rank = r, .nranks = n}));
  }
  SimulationResult result = simulateAll(schedules, memory, t);
  ASSERT_TRUE(result.ok) << what << ": " << result.error;
  *right = true;
  for (int r = 0; r < n; ++r)
    for (int q = 0; q < n; ++q)
      for (size_t i = 0; i < count; ++i)
        *right = *right && t.get(memory[r].buffers.recv, q * count + i) == inputs[q][r * count + i];
}

void checkAllToAll(int n, size_t count, bool inPlace, AllToAllAlgorithm algorithm, const Typed& t) {
  bool right = false;
  ASSERT_NO_FATAL_FAILURE(runAllToAll(n, count, inPlace, algorithm, t, &right));
  EXPECT_TRUE(right) << label(allToAllName(algorithm), n, count, 0, inPlace, t);
}

TEST(CollectiveSchedules, AllToAllPairwiseBruckAndDirect) {
  for (int n : rankCounts())
    for (size_t count : elementCounts(n, true))
      for (bool inPlace : {false, true})
        for (AllToAllAlgorithm algorithm :
             {AllToAllAlgorithm::Pairwise, AllToAllAlgorithm::Bruck, AllToAllAlgorithm::Direct}) {
          // The direct schedule needs the buffers apart (the runtime never runs it in place).
          if (algorithm == AllToAllAlgorithm::Direct && (inPlace || n > 64)) continue;
          checkAllToAll(n, count, inPlace, algorithm, Typed{n % 2 ? ncclInt32 : ncclFloat64});
          if (HasFatalFailure()) return;
        }
}

// Why a rank in place refuses the direct all-to-all (runtime/exec/direct_path.h): a rank writes
// into a peer's receive buffer, which in place is the send buffer the peer has yet to send from.
TEST(CollectiveSchedules, DirectAllToAllInPlaceWouldLoseBlocks) {
  for (int n : {2, 3, 5}) {
    bool right = true;
    ASSERT_NO_FATAL_FAILURE(runAllToAll(n, 4, true, AllToAllAlgorithm::Direct, Typed{ncclInt32}, &right));
    EXPECT_FALSE(right) << n << " ranks";
  }
}

void checkGatherScatter(int n, size_t count, int root, bool inPlace, bool gather, const Typed& t, bool direct = false) {
  const std::string what =
      label(gather ? (direct ? "direct gather" : "gather") : (direct ? "direct scatter" : "scatter"), n, count, root,
            inPlace, t);
  const DirectParams directParams{.count = count, .elementSize = t.size(), .nranks = n, .root = root};
  auto withRank = [&](int r) {
    DirectParams p = directParams;
    p.rank = r;
    return p;
  };
  std::vector<RankMemory> memory(n);
  std::vector<Schedule> schedules;
  if (gather) {
    auto inputs = randomInputs(n, count);
    for (int r = 0; r < n; ++r) {
      const bool rootInPlace = inPlace && r == root;
      layout(memory[r], t, count, r == root ? n * count : 0, rootInPlace ? static_cast<long>(root * count) : -1);
      for (size_t i = 0; i < count; ++i) t.put(const_cast<char*>(memory[r].buffers.send), i, inputs[r][i]);
      schedules.push_back(direct ? buildDirectGather(withRank(r))
                                 : buildLinearGather({.count = count,
                                                      .elementSize = t.size(),
                                                      .rank = r,
                                                      .nranks = n,
                                                      .root = root,
                                                      .inPlace = rootInPlace}));
    }
    SimulationResult result = simulateAll(schedules, memory, t);
    ASSERT_TRUE(result.ok) << what << ": " << result.error;
    for (int q = 0; q < n; ++q)
      for (size_t i = 0; i < count; ++i)
        ASSERT_EQ(t.get(memory[root].buffers.recv, q * count + i), inputs[q][i]) << what << " block " << q;
    return;
  }
  auto inputs = randomInputs(1, n * count);
  for (int r = 0; r < n; ++r) {
    const bool rootInPlace = inPlace && r == root;
    layout(memory[r], t, r == root ? n * count : 0, count, rootInPlace ? static_cast<long>(root * count) : -1);
    if (r == root)
      for (size_t i = 0; i < n * count; ++i) t.put(const_cast<char*>(memory[r].buffers.send), i, inputs[0][i]);
    schedules.push_back(direct ? buildDirectScatter(withRank(r))
                               : buildLinearScatter({.count = count,
                                                     .elementSize = t.size(),
                                                     .rank = r,
                                                     .nranks = n,
                                                     .root = root,
                                                     .inPlace = rootInPlace}));
  }
  SimulationResult result = simulateAll(schedules, memory, t);
  ASSERT_TRUE(result.ok) << what << ": " << result.error;
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i)
      ASSERT_EQ(t.get(memory[r].buffers.recv, i), inputs[0][r * count + i]) << what << " rank " << r;
}

TEST(CollectiveSchedules, GatherAndScatterLinearAndDirect) {
  for (int n : rankCounts())
    for (size_t count : elementCounts(n, false))
      for (int root : roots(n))
        for (bool inPlace : {false, true})
          for (bool gather : {false, true})
            for (bool direct : {false, true}) {
              if (direct && n > 64) continue;
              checkGatherScatter(n, count, root, inPlace, gather, Typed{n % 2 ? ncclInt32 : ncclFloat64}, direct);
              if (HasFatalFailure()) return;
            }
}

// Random groups of sends and receives: every rank sends a few messages of random sizes to random
// peers (itself included); the receiver posts its receives in a shuffled order that keeps the
// order per peer. Each message must land where its receive says.
// The largest communicators weft targets, every collective and algorithm once: 1000 and 1024 ranks,
// one element a rank (fewer elements than ranks for the broadcast-like collectives), in place
// where the in-place layout differs.
TEST(CollectiveSchedules, ThousandRanksLogDepthAndLinearAlgorithms) {
  for (int n : {1000, 1024}) {
    const Typed t{n % 2 ? ncclInt32 : ncclFloat64};
    for (GatherAlgorithm a : {GatherAlgorithm::Bruck, GatherAlgorithm::RecursiveDoubling})
      ASSERT_NO_FATAL_FAILURE(checkAllGather(n, 1, n == 1024, a, t));
    ASSERT_NO_FATAL_FAILURE(
        checkReduceScatter(n, 1, n == 1024, n == 1000, false, ScatterAlgorithm::RecursiveHalving, t));
    for (RootedAlgorithm a : {RootedAlgorithm::Binomial, RootedAlgorithm::Chain}) {
      ASSERT_NO_FATAL_FAILURE(checkBroadcast(n, 7, n - 1, false, a, t));
      ASSERT_NO_FATAL_FAILURE(checkReduce(n, 7, n / 3, true, a, 0, t));
    }
    ASSERT_NO_FATAL_FAILURE(checkAllToAll(n, 1, false, AllToAllAlgorithm::Bruck, t));
    for (bool gather : {false, true}) ASSERT_NO_FATAL_FAILURE(checkGatherScatter(n, 1, n / 2, true, gather, t));
  }
}

// The algorithms whose message count grows as n^2 (ring and hierarchical all-gather and
// reduce-scatter, pairwise all-to-all: ~1M simulated messages each), one test per rank count and
// algorithm. The default suite runs seven; the three slowest (in-place at 1024 ranks, 20 s each
// here) run with `ctest -L slow` (tests/unit/ and tests/slow/algorithms_collectives.cmake).
enum class QuadraticCase {
  RingAllGather,
  HierarchicalAllGather,
  RingReduceScatter,
  HierarchicalReduceScatter,
  PairwiseAllToAll
};

struct AtScale {
  int ranks;
  QuadraticCase algorithm;
};

class CollectiveSchedulesAtScale : public ::testing::TestWithParam<AtScale> {};

TEST_P(CollectiveSchedulesAtScale, QuadraticAlgorithm) {
  const int n = GetParam().ranks;
  const Typed t{n % 2 ? ncclInt32 : ncclFloat64};
  const bool inPlace = n == 1024, average = n == 1000;
  switch (GetParam().algorithm) {
    case QuadraticCase::RingAllGather: return checkAllGather(n, 1, inPlace, GatherAlgorithm::Ring, t);
    case QuadraticCase::HierarchicalAllGather: return checkAllGather(n, 1, inPlace, GatherAlgorithm::Hierarchical, t);
    case QuadraticCase::RingReduceScatter:
      return checkReduceScatter(n, 1, inPlace, average, false, ScatterAlgorithm::Ring, t);
    case QuadraticCase::HierarchicalReduceScatter:
      return checkReduceScatter(n, 1, inPlace, average, false, ScatterAlgorithm::Hierarchical, t);
    case QuadraticCase::PairwiseAllToAll: return checkAllToAll(n, 1, false, AllToAllAlgorithm::Pairwise, t);
  }
}

std::string atScaleName(const ::testing::TestParamInfo<AtScale>& info) {
  static const char* const names[] = {"RingAllGather", "HierarchicalAllGather", "RingReduceScatter",
                                      "HierarchicalReduceScatter", "PairwiseAllToAll"};
  return names[static_cast<int>(info.param.algorithm)] + std::string("_") + std::to_string(info.param.ranks);
}

INSTANTIATE_TEST_SUITE_P(
    ThousandRanks, CollectiveSchedulesAtScale,
    ::testing::Values(AtScale{1000, QuadraticCase::RingAllGather}, AtScale{1024, QuadraticCase::RingAllGather},
                      AtScale{1000, QuadraticCase::HierarchicalAllGather},
                      AtScale{1024, QuadraticCase::HierarchicalAllGather},
                      AtScale{1000, QuadraticCase::RingReduceScatter}, AtScale{1024, QuadraticCase::RingReduceScatter},
                      AtScale{1000, QuadraticCase::HierarchicalReduceScatter},
                      AtScale{1024, QuadraticCase::HierarchicalReduceScatter},
                      AtScale{1000, QuadraticCase::PairwiseAllToAll}, AtScale{1024, QuadraticCase::PairwiseAllToAll}),
    atScaleName);

TEST(CollectiveSchedules, PointToPointGroups) {
  std::uniform_int_distribution<int> small(0, 5);
  for (int n : rankCounts()) {
    const int messagesPerRank = n > 64 ? 1 : 3;
    struct Message {
      int from, to;
      size_t bytes, sendOffset, recvOffset;
    };
    std::vector<Message> messages;
    std::vector<size_t> sendUsed(n, 0), recvUsed(n, 0);
    for (int from = 0; from < n; ++from)
      for (int k = 0; k < messagesPerRank; ++k) {
        int to = std::uniform_int_distribution<int>(0, n - 1)(rng());
        size_t bytes = static_cast<size_t>(small(rng())) * 3;  // any byte count, zero included
        messages.push_back({from, to, bytes, sendUsed[from], recvUsed[to]});
        sendUsed[from] += bytes;
        recvUsed[to] += bytes;
      }
    std::vector<PointToPointParams> params(n);
    for (int r = 0; r < n; ++r) params[r].rank = r;
    for (const Message& m : messages)
      params[m.from].ops.push_back({.peer = m.to, .bytes = m.bytes, .send = true, .offset = m.sendOffset});
    // Receives: per receiver in message order (= per-sender order), then interleaved with the
    // sends at random positions.
    for (const Message& m : messages) {
      auto& ops = params[m.to].ops;
      size_t lastSamePeer = 0;
      for (size_t i = 0; i < ops.size(); ++i)
        if (!ops[i].send && ops[i].peer == m.from) lastSamePeer = i + 1;
      size_t at = std::uniform_int_distribution<size_t>(lastSamePeer, ops.size())(rng());
      ops.insert(ops.begin() + at, {.peer = m.from, .bytes = m.bytes, .send = false, .offset = m.recvOffset});
    }
    std::vector<RankMemory> memory(n);
    std::vector<Schedule> schedules(n);
    std::vector<std::vector<char>> sent(n);
    for (int r = 0; r < n; ++r) {
      memory[r].sendStorage.resize(sendUsed[r] + 1);
      for (char& c : memory[r].sendStorage) c = static_cast<char>(rng()());
      memory[r].recvStorage.assign(recvUsed[r] + 1, 0);
      memory[r].buffers = {memory[r].sendStorage.data(), memory[r].recvStorage.data(), sendUsed[r], recvUsed[r]};
      std::string error;
      ASSERT_TRUE(buildPointToPoint(params[r], &schedules[r], &error)) << error;
    }
    SimulationResult result = simulateAll(schedules, memory, Typed{ncclInt32});
    ASSERT_TRUE(result.ok) << "n=" << n << ": " << result.error;
    for (const Message& m : messages)
      ASSERT_EQ(0, memcmp(memory[m.from].sendStorage.data() + m.sendOffset,
                          memory[m.to].recvStorage.data() + m.recvOffset, m.bytes))
          << "n=" << n << " message " << m.from << "->" << m.to;
  }
}

TEST(CollectiveSchedules, PointToPointRejectsUnpairedSelfMessages) {
  Schedule schedule;
  std::string error;
  EXPECT_FALSE(buildPointToPoint({.rank = 0, .ops = {{.peer = 0, .bytes = 8, .send = true}}}, &schedule, &error));
  EXPECT_NE(error.find("self"), std::string::npos);
  EXPECT_FALSE(buildPointToPoint(
      {.rank = 0, .ops = {{.peer = 0, .bytes = 8, .send = true}, {.peer = 0, .bytes = 4, .send = false}}}, &schedule,
      &error));
}

}  // namespace
