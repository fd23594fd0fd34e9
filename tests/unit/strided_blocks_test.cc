// Strided all-gathers, reduce-scatters, all-to-alls, gathers and scatters
// (algorithms/builders/strided_blocks.h): slice k of a call of C elements a rank, its blocks C
// elements apart. Every algorithm is run by the simulator with real data, half the ranks on the
// strided buffers of the whole call and the other half on contiguous buffers of the slice alone (a
// staged rank), so that a message the strided form changed would fail the run. Results are
// checked against a reference computed here, and every element outside the slice must be left as
// it was.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/collective_schedule.h"
#include "algorithms/simulation/simulator.h"

using namespace weft;

namespace {

constexpr int32_t kUntouched = -999;  // no input or result has it

enum class Layout { Identity, Shuffled, Interleaved };  // ring order and nodes (below)
enum class Operator { Sum, Average, PreMulSum };        // a reduce-scatter's

struct Case {
  Collective collective;
  Algorithm algorithm;
  int n;
  size_t whole;  // C: the call's elements a rank
  size_t first;  // the slice: elements [first, first + count) of every block
  size_t count;
  bool inPlace;
  int channels;
  Layout layout = Layout::Identity;
  Operator op = Operator::Sum;

  std::string describe() const {
    static const char* const layouts[] = {"identity", "shuffled", "interleaved"};
    static const char* const ops[] = {"sum", "avg", "premulsum"};
    return std::string(collectiveName(collective)) + " " + algorithmName(algorithm) + " n=" + std::to_string(n) +
           " C=" + std::to_string(whole) + " slice [" + std::to_string(first) + ", +" + std::to_string(count) + ")" +
           (inPlace ? " in place" : "") + " channels=" + std::to_string(channels) + " layout " +
           layouts[static_cast<int>(layout)] + " " + ops[static_cast<int>(op)];
  }
};

// One rank's memory, int32 elements: the whole call's buffers (strided ranks) or the slice's.
struct Rank {
  std::vector<int32_t> send, recv;
  SimulatedBuffers buffers;
};

int32_t input(int rank, size_t element) { return static_cast<int32_t>(rank * 1000 + element % 997) - 400; }

// Runs every rank's schedule on its buffers in the simulator, int32 elements; `scalars`: each
// rank's PreMulSum factor, or none. False (and a failure) where the run failed.
bool simulated(const std::vector<Rank>& ranks, const std::vector<Schedule>& schedules, const std::string& what,
               std::vector<std::vector<char>> scalars = {}) {
  SimulationOptions options;
  options.type = ncclInt32;
  options.scalars = std::move(scalars);
  std::vector<SimulatedBuffers> buffers;
  for (const Rank& m : ranks) buffers.push_back(m.buffers);
  const SimulationResult result = simulate(schedules, buffers, options);
  EXPECT_TRUE(result.ok) << what << ": " << result.error;
  return result.ok;
}

// A shape of int32 elements: `count` of them a block (or the buffer), `stride` apart (0: back to
// back).
CollectiveShape shapeOf(Collective collective, size_t count, int rank, int n, bool inPlace, size_t stride) {
  CollectiveShape shape;
  shape.collective = collective;
  shape.count = count;
  shape.elementSize = sizeof(int32_t);
  shape.rank = rank;
  shape.nranks = n;
  shape.inPlace = inPlace;
  shape.blockStride = stride;
  return shape;
}

// Where rank r's slice lies in its buffer of n blocks: on the even ranks in the whole call's
// blocks of C elements, from element k0 of each (strided); on the odd ones in blocks of the slice's
// s elements, back to back.
struct SliceLayout {
  bool strided;
  size_t block, skip;
};
SliceLayout layoutOf(int r, size_t C, size_t s, size_t k0) {
  const bool strided = r % 2 == 0;
  return {strided, strided ? C : s, strided ? k0 : 0};
}

// `algorithm`'s schedule for `shape`; false (and a failure) where another algorithm was built.
bool buildInto(std::vector<Schedule>& schedules, Algorithm algorithm, const CollectiveShape& shape,
               const std::string& what) {
  Algorithm ran = algorithm;
  schedules.push_back(buildCollectiveSchedule(algorithm, shape, &ran));
  EXPECT_EQ(ran, algorithm) << what;
  return ran == algorithm;
}

// The ring order: 0..n-1, or a fixed permutation. The nodes: equal nodes of 2 where n allows (the
// hierarchical schedules' rails) made of consecutive ranks, or of interleaved ones (node 0 the
// even ranks: two fake hosts' layout, where rail-major order puts consecutive ranks together),
// else one node.
std::vector<int> orderOf(const Case& c) {
  std::vector<int> order;
  if (c.layout != Layout::Shuffled) return order;
  for (int k = 0; k < c.n; ++k) order.push_back(c.n - 1 - k);  // reversed, then two swapped
  if (c.n > 2) std::swap(order[0], order[c.n / 2]);
  return order;
}
std::vector<std::vector<int>> nodesOf(const Case& c) {
  const int n = c.n;
  std::vector<std::vector<int>> nodes;
  if (n % 2 != 0) return {orderOrIdentity({}, n)};
  if (c.layout == Layout::Interleaved) {
    nodes.resize(2);
    for (int r = 0; r < n; ++r) nodes[r % 2].push_back(r);
    return nodes;
  }
  for (int first = 0; first < n; first += 2) nodes.push_back({first, first + 1});
  return nodes;
}

// A reduce-scatter's result at element `element` of rank r's block of the whole call.
int32_t reduced(const Case& c, int r, size_t element) {
  int64_t sum = 0;
  for (int p = 0; p < c.n; ++p) sum += (c.op == Operator::PreMulSum ? 1 + p % 3 : 1) * input(p, r * c.whole + element);
  if (c.op == Operator::Average) sum /= c.n;  // truncated, as the int32 average is
  return static_cast<int32_t>(sum);
}

void check(const Case& c) {
  const bool gathers = c.collective == Collective::AllGather;
  const int n = c.n;
  const size_t C = c.whole, s = c.count, k0 = c.first, es = sizeof(int32_t);
  const std::vector<std::vector<int>> nodes = nodesOf(c);
  std::vector<std::vector<char>> scalars;
  std::vector<Rank> ranks(n);
  std::vector<Schedule> schedules;
  for (int r = 0; r < n; ++r) {
    Rank& m = ranks[r];
    const auto [strided, block, skip] = layoutOf(r, C, s, k0);  // the big buffer: n blocks
    CollectiveShape shape{.collective = c.collective,
                          .count = s,
                          .elementSize = es,
                          .rank = r,
                          .nranks = n,
                          .order = orderOf(c),
                          .nodes = nodes,
                          .average = c.op == Operator::Average,
                          .preScale = c.op == Operator::PreMulSum,
                          .inPlace = c.inPlace,
                          .channels = c.channels};
    const int32_t scalar = 1 + r % 3;
    scalars.emplace_back(reinterpret_cast<const char*>(&scalar), reinterpret_cast<const char*>(&scalar + 1));
    std::vector<int32_t>& big = gathers ? m.recv : m.send;
    std::vector<int32_t>& small = gathers ? m.send : m.recv;
    big.assign(n * block, kUntouched);
    small.assign(strided ? C : s, kUntouched);
    // Inputs: an all-gather's own block, a reduce-scatter's every block.
    for (size_t i = 0; i < s; ++i) {
      if (gathers) (c.inPlace ? big[r * block + skip + i] : small[skip + i]) = input(r, k0 + i);
      if (!gathers)
        for (int q = 0; q < n; ++q) big[q * block + skip + i] = input(r, q * C + k0 + i);
    }
    int32_t* bigSlice = big.data() + skip;
    int32_t* smallSlice = c.inPlace ? bigSlice + r * block : small.data() + skip;
    m.buffers.send = reinterpret_cast<const char*>(gathers ? smallSlice : bigSlice);
    m.buffers.recv = reinterpret_cast<char*>(gathers ? bigSlice : smallSlice);
    const size_t bigBytes = ((n - 1) * block + s) * es, smallBytes = s * es;
    m.buffers.sendBytes = gathers ? smallBytes : bigBytes;
    m.buffers.recvBytes = gathers ? bigBytes : smallBytes;
    if (strided) shape.blockStride = C;
    if (!buildInto(schedules, c.algorithm, shape, c.describe())) return;
  }
  if (c.op != Operator::PreMulSum) scalars.clear();
  if (!simulated(ranks, schedules, c.describe(), std::move(scalars))) return;

  for (int r = 0; r < n; ++r) {
    const Rank& m = ranks[r];
    const auto [strided, block, skip] = layoutOf(r, C, s, k0);
    const std::vector<int32_t>& big = gathers ? m.recv : m.send;
    for (int q = 0; q < n; ++q)
      for (size_t i = 0; i < block; ++i) {
        const bool inSlice = i >= skip && i < skip + s;
        int32_t expected = kUntouched;
        if (gathers && inSlice) expected = input(q, k0 + i - skip);
        if (!gathers && inSlice) expected = input(r, q * C + k0 + i - skip);  // the input, left as it was
        if (!gathers && inSlice && c.inPlace && q == r) expected = reduced(c, r, k0 + i - skip);  // in place
        ASSERT_EQ(big[q * block + i], expected) << c.describe() << ": rank " << r << " block " << q << " element " << i;
      }
    if (c.inPlace) continue;
    const std::vector<int32_t>& small = gathers ? m.send : m.recv;
    for (size_t i = 0; i < small.size(); ++i) {
      const bool inSlice = i >= skip && i < skip + s;
      int32_t expected = kUntouched;
      if (gathers && inSlice) expected = input(r, k0 + i - skip);
      if (!gathers && inSlice) expected = reduced(c, r, k0 + i - skip);
      ASSERT_EQ(small[i], expected) << c.describe() << ": rank " << r << " element " << i << " of its own block";
    }
  }
}

// An all-to-all's slice: both buffers strided on the even ranks, back to back on the odd ones.
// Rank r's send block q holds what rank q receives in block r; in place, one buffer for both.
void checkAllToAll(Algorithm algorithm, int n, size_t C, size_t k0, size_t s, bool inPlace) {
  const std::string what = std::string("alltoall ") + algorithmName(algorithm) + " n=" + std::to_string(n) +
                           " slice [" + std::to_string(k0) + ", +" + std::to_string(s) + ")" +
                           (inPlace ? " in place" : "");
  const size_t es = sizeof(int32_t);
  std::vector<Rank> ranks(n);
  std::vector<Schedule> schedules;
  for (int r = 0; r < n; ++r) {
    Rank& m = ranks[r];
    const auto [strided, block, skip] = layoutOf(r, C, s, k0);
    m.send.assign(n * block, kUntouched);
    m.recv.assign(n * block, kUntouched);
    std::vector<int32_t>& in = inPlace ? m.recv : m.send;
    for (int q = 0; q < n; ++q)
      for (size_t i = 0; i < s; ++i) in[q * block + skip + i] = input(r, q * C + k0 + i);
    m.buffers.send = reinterpret_cast<const char*>(in.data() + skip);
    m.buffers.recv = reinterpret_cast<char*>(m.recv.data() + skip);
    m.buffers.sendBytes = m.buffers.recvBytes = ((n - 1) * block + s) * es;
    const CollectiveShape shape = shapeOf(Collective::AllToAll, s, r, n, inPlace, strided ? C : 0);
    if (!buildInto(schedules, algorithm, shape, what)) return;
  }
  if (!simulated(ranks, schedules, what)) return;
  for (int r = 0; r < n; ++r) {
    const Rank& m = ranks[r];
    const auto [strided, block, skip] = layoutOf(r, C, s, k0);
    for (int q = 0; q < n; ++q)
      for (size_t i = 0; i < block; ++i) {
        const bool inSlice = i >= skip && i < skip + s;
        const int32_t received = inSlice ? input(q, r * C + k0 + i - skip) : kUntouched;
        ASSERT_EQ(m.recv[q * block + i], received) << what << ": rank " << r << " block " << q << " element " << i;
        if (inPlace) continue;
        const int32_t sent = inSlice ? input(r, q * C + k0 + i - skip) : kUntouched;
        ASSERT_EQ(m.send[q * block + i], sent) << what << ": rank " << r << " send block " << q << " element " << i;
      }
  }
}

// A gather's or scatter's slice: the root's buffer of n blocks strided on the even ranks (when
// the root is one), back to back on the odd ones; every rank's own block contiguous.
void checkRooted(Collective collective, Algorithm algorithm, int n, int root, size_t C, size_t k0, size_t s,
                 bool inPlace) {
  const bool gathers = collective == Collective::Gather;
  const std::string what = std::string(collectiveName(collective)) + " " + algorithmName(algorithm) +
                           " n=" + std::to_string(n) + " root " + std::to_string(root) + " slice [" +
                           std::to_string(k0) + ", +" + std::to_string(s) + ")" + (inPlace ? " in place" : "");
  const size_t es = sizeof(int32_t);
  std::vector<Rank> ranks(n);
  std::vector<Schedule> schedules;
  for (int r = 0; r < n; ++r) {
    Rank& m = ranks[r];
    const auto [strided, block, skip] = layoutOf(r, C, s, k0);
    const bool isRoot = r == root, own = inPlace && isRoot;
    std::vector<int32_t>& big = gathers ? m.recv : m.send;
    std::vector<int32_t>& small = gathers ? m.send : m.recv;
    big.assign(isRoot ? n * block : 0, kUntouched);
    small.assign(s, kUntouched);
    for (size_t i = 0; i < s; ++i) {
      if (gathers) (own ? big[r * block + skip + i] : small[i]) = input(r, k0 + i);
      if (!gathers && isRoot)
        for (int q = 0; q < n; ++q) big[q * block + skip + i] = input(r, q * C + k0 + i);
    }
    int32_t* bigSlice = isRoot ? big.data() + skip : nullptr;
    int32_t* smallSlice = own ? bigSlice + r * block : small.data();
    m.buffers.send = reinterpret_cast<const char*>(gathers ? smallSlice : bigSlice);
    m.buffers.recv = reinterpret_cast<char*>(gathers ? bigSlice : smallSlice);
    const size_t bigBytes = isRoot ? ((n - 1) * block + s) * es : 0;
    m.buffers.sendBytes = gathers ? s * es : bigBytes;
    m.buffers.recvBytes = gathers ? bigBytes : s * es;
    CollectiveShape shape = shapeOf(collective, s, r, n, own, strided ? C : 0);
    shape.root = root;
    if (!buildInto(schedules, algorithm, shape, what)) return;
  }
  if (!simulated(ranks, schedules, what)) return;
  for (int r = 0; r < n; ++r) {
    const Rank& m = ranks[r];
    const auto [strided, block, skip] = layoutOf(r, C, s, k0);
    if (r == root) {
      const std::vector<int32_t>& big = gathers ? m.recv : m.send;
      for (int q = 0; q < n; ++q)
        for (size_t i = 0; i < block; ++i) {
          const bool inSlice = i >= skip && i < skip + s;
          const int32_t expected = !inSlice  ? kUntouched
                                   : gathers ? input(q, k0 + i - skip)
                                             : input(r, q * C + k0 + i - skip);
          ASSERT_EQ(big[q * block + i], expected) << what << ": root block " << q << " element " << i;
        }
      if (inPlace) continue;
    }
    if (gathers) continue;  // a gather's input, read only
    for (size_t i = 0; i < s; ++i)
      ASSERT_EQ(m.recv[i], input(root, r * C + k0 + i)) << what << ": rank " << r << " element " << i;
  }
}

TEST(StridedBlocks, GatherAndScatterOnSlicesOfALargerCall) {
  for (Collective collective : {Collective::Gather, Collective::Scatter})
    for (int n : {1, 2, 3, 4, 5})
      for (int root = 0; root < n; ++root)
        for (bool inPlace : {false, true})
          for (const auto& [first, count] : std::vector<std::pair<size_t, size_t>>{{7, 7}, {14, 5}, {3, 1}}) {
            checkRooted(collective, Algorithm::Linear, n, root, 19, first, count, inPlace);
            if (HasFatalFailure()) return;
          }
}

TEST(StridedBlocks, EveryAllToAllAlgorithmOnSlicesOfALargerCall) {
  for (Algorithm algorithm : {Algorithm::Pairwise, Algorithm::Bruck})
    for (int n : {1, 2, 3, 4, 5, 8})
      for (bool inPlace : {false, true})
        for (const auto& [first, count] : std::vector<std::pair<size_t, size_t>>{{7, 7}, {14, 5}, {3, 1}}) {
          checkAllToAll(algorithm, n, 19, first, count, inPlace);
          if (HasFatalFailure()) return;
        }
}

TEST(StridedBlocks, EveryAllGatherAndReduceScatterAlgorithmOnSlicesOfALargerCall) {
  const std::vector<Algorithm> gatherAlgorithms = {Algorithm::Ring, Algorithm::Rhd, Algorithm::Bruck, Algorithm::Hier};
  const std::vector<Algorithm> scatterAlgorithms = {Algorithm::Ring, Algorithm::Rhd, Algorithm::Hier};
  for (Collective collective : {Collective::AllGather, Collective::ReduceScatter})
    for (Algorithm algorithm : collective == Collective::AllGather ? gatherAlgorithms : scatterAlgorithms)
      for (int n : {1, 2, 3, 4, 5, 6, 8})
        for (bool inPlace : {false, true})
          for (int channels : {1, 3})
            for (Layout layout : {Layout::Identity, Layout::Shuffled, Layout::Interleaved})
              for (Operator op : {Operator::Sum, Operator::Average, Operator::PreMulSum}) {
                if (channels > 1 && algorithm != Algorithm::Ring) continue;
                if (op != Operator::Sum && collective == Collective::AllGather) continue;
                // A middle slice, the tail slice, and one element.
                for (const auto& [first, count] : std::vector<std::pair<size_t, size_t>>{{7, 7}, {14, 5}, {3, 1}}) {
                  check({collective, algorithm, n, 19, first, count, inPlace, channels, layout, op});
                  if (HasFatalFailure()) return;
                }
              }
}

// Rank 1 of 4, blocks of 8 floats (32 bytes), not strided.
CollectiveShape smallShape(Collective collective) { return shapeOf(collective, 8, 1, 4, false, 0); }

TEST(StridedBlocks, RingsMoveTheirRangesAndOthersGoThroughScratch) {
  CollectiveShape shape = smallShape(Collective::AllGather);
  const Schedule contiguous = buildCollectiveSchedule(Algorithm::Ring, shape);
  shape.blockStride = 100;
  const Schedule ring = buildCollectiveSchedule(Algorithm::Ring, shape);
  EXPECT_EQ(ring.steps.size(), contiguous.steps.size());
  EXPECT_EQ(ring.scratchBytes, contiguous.scratchBytes);
  const Schedule doubling = buildCollectiveSchedule(Algorithm::Rhd, shape);
  shape.blockStride = 0;
  const Schedule doublingContiguous = buildCollectiveSchedule(Algorithm::Rhd, shape);
  // Recursive doubling's messages span blocks, so it runs on a contiguous copy in Scratch: every
  // block is first written whole (its own copied from the send buffer, the others received), so
  // nothing is copied in, and all 4 are copied out.
  EXPECT_EQ(doubling.steps.size(), doublingContiguous.steps.size() + 4);
  EXPECT_GE(doubling.scratchBytes, 4u * 8 * 4);
}

// The direct schedules of every collective with a block per rank (pieces cut to fit the own
// device buffers) stay direct when strided: every range of their strided buffer lies inside one block, so this rank's
// move with no Scratch, and the peers' (owner >= 0) are left at block `rank` as if contiguous, for the direct path to
// move its mapping of each peer's buffer (runtime/exec/direct_path.cc).
TEST(StridedBlocks, DirectSchedulesMoveOnlyThisRanksRanges) {
  for (Collective collective : {Collective::AllGather, Collective::ReduceScatter, Collective::AllToAll,
                                Collective::Gather, Collective::Scatter})
    for (int rank : {0, 1, 3})
      for (bool inPlace : {false, true}) {
        const std::string what =
            std::string(collectiveName(collective)) + " rank " + std::to_string(rank) + (inPlace ? " in place" : "");
        CollectiveShape shape = smallShape(collective);
        shape.rank = rank;
        shape.inPlace = inPlace;
        const Schedule contiguous = buildCollectiveSchedule(Algorithm::Direct, shape);
        shape.blockStride = 100;
        Algorithm ran = Algorithm::Ring;
        const Schedule strided = buildCollectiveSchedule(Algorithm::Direct, shape, &ran);
        EXPECT_EQ(ran, Algorithm::Direct) << what;
        EXPECT_EQ(strided.scratchBytes, 0u) << what;
        ASSERT_EQ(strided.steps.size(), contiguous.steps.size()) << what;
        auto isStrided = [&](BufferKind kind) {
          if (collective == Collective::AllToAll) return kind != BufferKind::Scratch;
          const bool gathers = collective == Collective::AllGather || collective == Collective::Gather;
          return kind == (gathers ? BufferKind::Recv : BufferKind::Send);
        };
        size_t moved = 0;
        for (size_t i = 0; i < strided.steps.size(); ++i) {
          const Step &a = contiguous.steps[i], &b = strided.steps[i];
          const BufferRange* before[] = {&a.src, &a.dst, &a.src2, &a.dst2};
          const BufferRange* after[] = {&b.src, &b.dst, &b.src2, &b.dst2};
          for (int k = 0; k < 4; ++k) {
            const BufferRange &x = *before[k], &y = *after[k];
            EXPECT_EQ(y.bytes, x.bytes) << what;
            EXPECT_EQ(y.owner, x.owner) << what;
            if (x.bytes && isStrided(x.buffer) && x.owner < 0) {
              EXPECT_EQ(y.offset, x.offset / 32 * 400 + x.offset % 32) << what << " step " << i;
              ++moved;
            } else {
              EXPECT_EQ(y.offset, x.offset) << what << " step " << i << ": not this rank's";
            }
          }
        }
        // Off the root a gather or scatter has no strided buffer of its own.
        const bool rooted = collective == Collective::Gather || collective == Collective::Scatter;
        if (!rooted || rank == shape.root) {
          EXPECT_GT(moved, 0u) << what;
        }
      }
}

}  // namespace
