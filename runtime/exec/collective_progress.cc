#include "runtime/exec/collective_progress.h"

#include "common/cycle_clock.h"

namespace weft {

namespace {
constexpr auto kRelaxed = std::memory_order_relaxed;
}

void CollectiveProgress::started(uint64_t sequence, const char* name, uint64_t stamp) {
  inFlightSequence_.store(sequence, kRelaxed);
  inFlightName_.store(name, kRelaxed);
  inFlightStamp_.store(stamp, kRelaxed);
  singleWriterAdd<uint64_t>(issued_, 1);
}

void CollectiveProgress::finished(uint64_t sequence, uint64_t stamp, bool failed) {
  inFlightStamp_.store(0, kRelaxed);
  lastSequence_.store(sequence, kRelaxed);
  lastName_.store(inFlightName_.load(kRelaxed), kRelaxed);
  lastFailed_.store(failed, kRelaxed);
  lastStamp_.store(stamp ? stamp : 1, kRelaxed);
  singleWriterAdd<uint64_t>(completed_, 1);
}

void CollectiveProgress::waiting(const WaitPoint& wait) {
  const uint32_t version = waitVersion_.load(kRelaxed);
  waitVersion_.store(version + 1, kRelaxed);
  std::atomic_thread_fence(std::memory_order_release);
  waitSequence_.store(wait.sequence, kRelaxed);
  waitStep_.store(wait.step, kRelaxed);
  waitKind_.store(wait.stepKind, kRelaxed);
  waitPeer_.store(wait.peer, kRelaxed);
  waitSlice_.store(wait.slice, kRelaxed);
  waitSlices_.store(wait.slices, kRelaxed);
  waitSinceNs_.store(wait.sinceNs, kRelaxed);
  waitSet_.store(true, kRelaxed);
  waitVersion_.store(version + 2, std::memory_order_release);
}

void CollectiveProgress::progressed() { waitSet_.store(false, kRelaxed); }

ProgressSnapshot CollectiveProgress::snapshot() const {
  ProgressSnapshot s;
  s.issued = issued_.load(kRelaxed);
  s.completed = completed_.load(kRelaxed);
  const uint64_t inFlightStamp = inFlightStamp_.load(kRelaxed);
  s.inFlight = inFlightStamp != 0;
  if (s.inFlight) {
    s.inFlightSequence = inFlightSequence_.load(kRelaxed);
    s.inFlightName = inFlightName_.load(kRelaxed);
    s.inFlightStartNs = cycleStampToSteadyNs(inFlightStamp);
  }
  const uint64_t lastStamp = lastStamp_.load(kRelaxed);
  s.anyCompleted = lastStamp != 0;
  if (s.anyCompleted) {
    s.lastSequence = lastSequence_.load(kRelaxed);
    s.lastName = lastName_.load(kRelaxed);
    s.lastEndNs = cycleStampToSteadyNs(lastStamp);
    s.lastFailed = lastFailed_.load(kRelaxed);
  }
  for (int attempt = 0; attempt < 100; ++attempt) {
    const uint32_t before = waitVersion_.load(std::memory_order_acquire);
    if (before & 1) continue;
    WaitPoint w;
    const bool set = waitSet_.load(kRelaxed);
    w.sequence = waitSequence_.load(kRelaxed);
    w.step = waitStep_.load(kRelaxed);
    w.stepKind = waitKind_.load(kRelaxed);
    w.peer = waitPeer_.load(kRelaxed);
    w.slice = waitSlice_.load(kRelaxed);
    w.slices = waitSlices_.load(kRelaxed);
    w.sinceNs = waitSinceNs_.load(kRelaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (waitVersion_.load(kRelaxed) != before) continue;
    s.waiting = set && s.inFlight && w.sequence == s.inFlightSequence;
    if (s.waiting) s.wait = w;
    break;
  }
  return s;
}

}  // namespace weft
