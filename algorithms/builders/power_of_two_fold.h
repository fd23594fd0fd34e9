// The standard fix that lets recursive halving/doubling run on any rank count n: with pw the
// largest power of two <= n and extra = n - pw, the first 2*extra positions pair up (2v, 2v+1)
// and each pair acts as one virtual rank v; positions from 2*extra on are virtual ranks
// position - extra. The even position of a pair sits out: it hands its data to its partner
// before the exchanges and gets the result back after them.
//
// Virtual rank v covers positions [firstPosition(v), lastPosition(v)], and a run of consecutive
// virtual ranks covers a run of consecutive positions, so the data of a group of virtual ranks
// is one contiguous range when it is laid out by position.
#pragma once

namespace weft {

struct PowerOfTwoFold {
  int n = 1;
  int pw = 1;
  int extra = 0;

  explicit PowerOfTwoFold(int ranks) : n(ranks < 1 ? 1 : ranks) {
    while (pw * 2 <= n) pw *= 2;
    extra = n - pw;
  }
  bool sitsOut(int position) const { return position < 2 * extra && position % 2 == 0; }
  // The position that stands in for a sitting-out one, and the reverse.
  bool standsIn(int position) const { return position < 2 * extra && position % 2 == 1; }
  int virtualRank(int position) const { return position < 2 * extra ? position / 2 : position - extra; }
  int firstPosition(int v) const { return v < extra ? 2 * v : v + extra; }
  int lastPosition(int v) const { return v < extra ? 2 * v + 1 : v + extra; }
  // The acting position of virtual rank v (the one that exchanges).
  int actingPosition(int v) const { return lastPosition(v); }
};

}  // namespace weft
