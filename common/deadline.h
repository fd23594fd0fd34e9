// A point in time after which a wait gives up. Every blocking wait in weft takes one.
//
// A wait can also be cancelled: while a CancelScope is open on a thread, every Deadline made
// on that thread expires as soon as the scope's flag is set. A communicator's calls and its
// initialization open one on the communicator's abort flag, so that ncclCommAbort ends every
// wait of theirs (bootstrap, connection set-up, socket I/O) within one poll interval.
#pragma once

#include <atomic>
#include <chrono>

namespace weft {

namespace detail {
inline thread_local const std::atomic<bool>* currentCancelFlag = nullptr;
}  // namespace detail

class CancelScope {
 public:
  explicit CancelScope(const std::atomic<bool>* flag) : previous_(detail::currentCancelFlag) {
    detail::currentCancelFlag = flag;
  }
  ~CancelScope() { detail::currentCancelFlag = previous_; }
  CancelScope(const CancelScope&) = delete;
  CancelScope& operator=(const CancelScope&) = delete;

 private:
  const std::atomic<bool>* previous_;
};

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;
  // Longer than this (or NaN) is never: converting more to the clock's 64-bit nanoseconds
  // would overflow and make the deadline lie in the past.
  static constexpr double kNeverSeconds = 1e9;  // about 31 years

  static Deadline after(double seconds) {
    Deadline d;
    if (!(seconds <= kNeverSeconds)) {
      d.at_ = Clock::time_point::max();
    } else {
      auto wait = std::chrono::duration<double>(seconds > 0 ? seconds : 0);
      d.at_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(wait);
    }
    d.cancel_ = detail::currentCancelFlag;
    return d;
  }
  bool cancelled() const { return cancel_ && cancel_->load(std::memory_order_acquire); }
  bool expired() const { return cancelled() || Clock::now() >= at_; }
  // Milliseconds left, at least 0, at most `cap` (for poll()).
  int millisecondsLeft(int cap = 1 << 30) const {
    if (cancelled()) return 0;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - Clock::now()).count();
    if (left < 0) return 0;
    return left > cap ? cap : static_cast<int>(left);
  }

 private:
  Clock::time_point at_{};
  const std::atomic<bool>* cancel_ = nullptr;
};

}  // namespace weft
