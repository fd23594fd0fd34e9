// The ring all-reduce schedule for 1..64 ranks, run symbolically: every element of every
// rank's result must hold every rank's contribution exactly once (and be divided once for avg),
// in and out of place, for counts below, at and above the rank count.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <numeric>
#include <vector>

#include "algorithms/builders/ring_allreduce.h"
#include "algorithms/builders/split_evenly.h"

using namespace weft;

namespace {

// An element's value, symbolically: how many times each rank's input went into it.
using Contributions = std::vector<uint16_t>;

struct SymbolicRank {
  std::vector<Contributions> send, recv;
  int divisions = 0;
  size_t next = 0;  // next step to run
};

std::vector<Contributions>& bufferOf(SymbolicRank& r, BufferKind kind, bool inPlace) {
  if (kind == BufferKind::Send && !inPlace) return r.send;
  return r.recv;  // in place: send and recv are one buffer
}

void runRing(int n, size_t count, bool inPlace, bool average) {
  std::vector<int> ring(n);
  std::iota(ring.begin(), ring.end(), 0);
  std::vector<Schedule> schedules;
  std::vector<SymbolicRank> ranks(n);
  for (int r = 0; r < n; ++r) {
    schedules.push_back(
        buildRingAllReduce({.count = count, .elementSize = 1, .rank = r, .ringOrder = ring, .average = average}));
    Contributions own(n, 0);
    own[r] = 1;
    ranks[r].send.assign(count, own);
    ranks[r].recv.assign(count, Contributions(n, 0));
    if (inPlace) ranks[r].recv = ranks[r].send;
  }
  std::map<std::pair<int, int>, std::deque<std::vector<Contributions>>> wires;
  bool moved = true;
  while (moved) {
    moved = false;
    for (int r = 0; r < n; ++r) {
      SymbolicRank& me = ranks[r];
      while (me.next < schedules[r].steps.size()) {
        const Step& s = schedules[r].steps[me.next];
        auto slice = [&](const BufferRange& range) {
          auto& buffer = bufferOf(me, range.buffer, inPlace);
          return std::vector<Contributions>(buffer.begin() + range.offset, buffer.begin() + range.offset + range.bytes);
        };
        if (s.kind == StepKind::Send) {
          wires[{r, s.peer}].push_back(slice(s.src));
        } else if (s.kind == StepKind::Recv || s.kind == StepKind::RecvReduce) {
          auto& wire = wires[{s.peer, r}];
          if (wire.empty()) break;
          auto message = wire.front();
          wire.pop_front();
          ASSERT_EQ(message.size(), s.dst.bytes) << "message size at rank " << r << " step " << me.next;
          auto local = s.kind == StepKind::RecvReduce ? slice(s.src)
                                                      : std::vector<Contributions>(message.size(), Contributions(n, 0));
          auto& dst = bufferOf(me, s.dst.buffer, inPlace);
          for (size_t i = 0; i < message.size(); ++i)
            for (int k = 0; k < n; ++k) dst[s.dst.offset + i][k] = local[i][k] + message[i][k];
        } else if (s.kind == StepKind::Copy) {
          auto data = slice(s.src);
          auto& dst = bufferOf(me, s.dst.buffer, inPlace);
          std::copy(data.begin(), data.end(), dst.begin() + s.dst.offset);
        } else if (s.kind == StepKind::Divide) {
          me.divisions += s.src.bytes > 0 ? 1 : 0;
          EXPECT_EQ(schedules[r].divisor, static_cast<uint64_t>(n));
        }
        ++me.next;
        moved = true;
      }
    }
  }
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(ranks[r].next, schedules[r].steps.size()) << "rank " << r << " stuck (deadlock) n=" << n;
    for (size_t i = 0; i < count; ++i)
      for (int k = 0; k < n; ++k)
        ASSERT_EQ(ranks[r].recv[i][k], 1) << "n=" << n << " count=" << count << " rank " << r << " element " << i
                                          << " has rank " << k << "'s input " << ranks[r].recv[i][k] << " times";
  }
  for (auto& [wire, queue] : wires)
    EXPECT_TRUE(queue.empty()) << "unconsumed message " << wire.first << "->" << wire.second;
  if (average && n > 1) {
    // Each rank divides the one chunk it owns; together they cover every non-empty chunk once.
    int chunksWithData = 0;
    for (int c = 0; c < n; ++c) chunksWithData += splitEvenly(count, n, c).end > splitEvenly(count, n, c).begin;
    int divisions = 0;
    for (auto& r : ranks) divisions += r.divisions;
    EXPECT_EQ(divisions, chunksWithData);
  }
}

TEST(RingAllReduceSchedule, EveryElementReducedExactlyOnceFor1To64Ranks) {
  for (int n = 1; n <= 64; ++n)
    for (size_t count : {size_t(0), size_t(1), size_t(n - 1 > 0 ? n - 1 : 0), size_t(n), size_t(3 * n + 1), size_t(97)})
      for (bool inPlace : {false, true}) {
        runRing(n, count, inPlace, n % 3 == 0);
        if (::testing::Test::HasFatalFailure()) return;
      }
}

TEST(RingAllReduceSchedule, SplitEvenlyCoversTheRange) {
  for (int parts = 1; parts <= 17; ++parts)
    for (size_t count : {0, 1, 5, 16, 17, 1000}) {
      size_t expected = 0;
      for (int c = 0; c < parts; ++c) {
        ElementSpan span = splitEvenly(count, parts, c);
        EXPECT_EQ(span.begin, expected);
        EXPECT_LE(span.end - span.begin, count / parts + 1);
        expected = span.end;
      }
      EXPECT_EQ(expected, count);
    }
}

// Pieces (NCCL's loops): 10 floats on 2 ranks with 8-byte chunks are reduced as three whole
// rings, over elements [0, 4), [4, 8) and [8, 10), one after another; each piece's steps are
// those of a ring over its span alone, moved to it.
TEST(RingAllReduceSchedule, PiecesAreWholeRingsOverConsecutiveSpans) {
  for (int rank : {0, 1}) {
    const RingAllReduceParams whole{.count = 10, .elementSize = 4, .rank = rank, .ringOrder = {0, 1}, .average = true};
    RingAllReduceParams inPieces = whole;
    inPieces.pieceChunkBytes = 8;
    const Schedule pieces = buildRingAllReduce(inPieces);
    std::vector<Step> expected;
    for (size_t first : {0, 4, 8}) {
      RingAllReduceParams piece = whole;
      piece.count = std::min<size_t>(4, 10 - first);
      for (Step step : buildRingAllReduce(piece).steps) {
        shiftRanges(&step, first * 4, 0);
        expected.push_back(step);
      }
    }
    ASSERT_EQ(pieces.steps.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(pieces.steps[i].kind, expected[i].kind) << "step " << i;
      EXPECT_EQ(pieces.steps[i].peer, expected[i].peer) << "step " << i;
      EXPECT_TRUE(pieces.steps[i].src == expected[i].src && pieces.steps[i].dst == expected[i].dst) << "step " << i;
    }
    EXPECT_EQ(pieces.divisor, 2u);
    // A chunk below one element, or a buffer that fits one piece: the plain ring.
    for (size_t chunk : {size_t(0), size_t(2), size_t(20)}) {
      inPieces.pieceChunkBytes = chunk;
      EXPECT_EQ(buildRingAllReduce(inPieces).steps.size(), buildRingAllReduce(whole).steps.size()) << chunk;
    }
  }
}

TEST(RingAllReduceSchedule, PrintsReadably) {
  Schedule s = buildRingAllReduce({.count = 8, .elementSize = 4, .rank = 0, .ringOrder = {0, 1}});
  std::string text = s.toString();
  EXPECT_NE(text.find("send"), std::string::npos);
  EXPECT_NE(text.find("recvReduce"), std::string::npos);
  EXPECT_NE(text.find("peer 1"), std::string::npos);
}

}  // namespace
