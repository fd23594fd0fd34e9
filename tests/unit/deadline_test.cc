// Deadline: a huge or non-finite time-out means "never", not an overflow into the past; a
// negative one has already passed; a cancel scope expires it at once.
#include "common/deadline.h"

#include <gtest/gtest.h>

#include <atomic>
#include <limits>

using weft::CancelScope;
using weft::Deadline;

TEST(Deadline, HugeTimeoutsSaturateInsteadOfOverflowing) {
  for (double seconds :
       {1e10, 1e12, 1e300, std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
    Deadline d = Deadline::after(seconds);
    EXPECT_FALSE(d.expired()) << seconds << " s";
    EXPECT_EQ(d.millisecondsLeft(100), 100) << seconds << " s";
    EXPECT_EQ(d.millisecondsLeft(), 1 << 30) << seconds << " s";
  }
}

TEST(Deadline, OrdinaryTimeoutsStillExpire) {
  EXPECT_TRUE(Deadline::after(0).expired());
  EXPECT_TRUE(Deadline::after(-5).expired());
  EXPECT_EQ(Deadline::after(-5).millisecondsLeft(), 0);
  Deadline d = Deadline::after(3600);
  EXPECT_FALSE(d.expired());
  EXPECT_GT(d.millisecondsLeft(), 3599 * 1000);
  EXPECT_LE(d.millisecondsLeft(), 3600 * 1000);
}

TEST(Deadline, CancelScopeExpiresEvenANeverDeadline) {
  std::atomic<bool> flag{false};
  CancelScope scope(&flag);
  Deadline d = Deadline::after(1e300);
  EXPECT_FALSE(d.expired());
  flag.store(true);
  EXPECT_TRUE(d.expired());
  EXPECT_EQ(d.millisecondsLeft(), 0);
}
