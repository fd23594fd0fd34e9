// A point in time after which a wait gives up. Every blocking wait in weft takes one.
#pragma once

#include <chrono>

namespace weft {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;
  static Deadline after(double seconds) {
    Deadline d;
    d.at_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    return d;
  }
  bool expired() const { return Clock::now() >= at_; }
  // Milliseconds left, at least 0, at most `cap` (for poll()).
  int millisecondsLeft(int cap = 1 << 30) const {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - Clock::now()).count();
    if (left < 0) return 0;
    return left > cap ? cap : static_cast<int>(left);
  }

 private:
  Clock::time_point at_{};
};

}  // namespace weft
