// Where a communicator's collectives stand right now, readable from another thread while they
// run: how many were issued and completed, the one in flight, the last one finished, and the
// step and peer the rank has been waiting on. The status server (runtime/status) reads it to
// answer `weft-info status`; the record ring (collective_record.h) holds the history but is
// written without synchronization, so it is not read from outside.
//
// One thread writes (the one running the communicator's collectives): plain loads and relaxed
// stores, no locked instruction on the hot path. The wait point, written only after a rank has
// spun without progress, is a seqlock so that a reader never mixes two waits.
#pragma once

#include <atomic>
#include <cstdint>

namespace weft {

// Adds to a value only one thread writes: a relaxed load and store, no locked instruction
// (readers on other threads see the old or the new value, never a torn one).
template <typename T>
inline void singleWriterAdd(std::atomic<T>& total, T value) {
  total.store(total.load(std::memory_order_relaxed) + value, std::memory_order_relaxed);
}

// The first unfinished step of a collective that cannot move.
struct WaitPoint {
  uint64_t sequence = 0;
  uint32_t step = 0;
  const char* stepKind = "";       // stepKindName (static text)
  int32_t peer = -1;               // -1: a local step, or sends still flushing
  uint32_t slice = 0, slices = 0;  // slices 0: no step left, sends still flushing
  int64_t sinceNs = 0;             // steady_clock ns: when the rank stopped making progress
};

struct ProgressSnapshot {
  uint64_t issued = 0;     // collectives begun; the next one is #issued
  uint64_t completed = 0;  // collectives ended (done or failed)
  bool inFlight = false;
  uint64_t inFlightSequence = 0;
  const char* inFlightName = "";
  int64_t inFlightStartNs = 0;
  bool waiting = false;  // `wait` belongs to the collective in flight
  WaitPoint wait;
  bool anyCompleted = false;
  uint64_t lastSequence = 0;
  const char* lastName = "";
  int64_t lastEndNs = 0;
  bool lastFailed = false;
};

class CollectiveProgress {
 public:
  // `stamp`: cycleStamp() (common/cycle_clock.h), converted only when read.
  void started(uint64_t sequence, const char* name, uint64_t stamp);
  void finished(uint64_t sequence, uint64_t stamp, bool failed);  // the one started last
  void waiting(const WaitPoint& wait);
  void progressed();  // the published wait is over
  ProgressSnapshot snapshot() const;

 private:
  std::atomic<uint64_t> issued_{0}, completed_{0};
  std::atomic<uint64_t> inFlightSequence_{0}, inFlightStamp_{0};  // stamp 0: none in flight
  std::atomic<const char*> inFlightName_{""};
  std::atomic<uint64_t> lastSequence_{0}, lastStamp_{0};  // stamp 0: none finished yet
  std::atomic<const char*> lastName_{""};
  std::atomic<bool> lastFailed_{false};
  // The wait point under a sequence lock: odd while being written.
  std::atomic<uint32_t> waitVersion_{0};
  std::atomic<bool> waitSet_{false};
  std::atomic<uint64_t> waitSequence_{0};
  std::atomic<uint32_t> waitStep_{0}, waitSlice_{0}, waitSlices_{0};
  std::atomic<const char*> waitKind_{""};
  std::atomic<int32_t> waitPeer_{-1};
  std::atomic<int64_t> waitSinceNs_{0};
};

}  // namespace weft
