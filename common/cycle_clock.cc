#include "common/cycle_clock.h"

#include <chrono>
#include <cstdint>

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

namespace weft {
namespace {

int64_t steadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool detectInvariantTsc() {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  // CPUID 0x80000007 EDX bit 8: the TSC runs at a constant rate in every power state.
  if (__get_cpuid(0x80000007, &a, &b, &c, &d)) return (d >> 8) & 1;
#endif
  return false;
}

const bool kUsesTsc = detectInvariantTsc();

struct Calibration {
  uint64_t stamp0 = 0;
  int64_t ns0 = 0;
  double nsPerTick = 1.0;
};

// A stamp and the steady_clock time it was taken at: the stamp read between two clock reads,
// the closest pair of five. (The first read of each clock can take tens of microseconds, its
// page faulted in: a pair without that care skewed the rate by 3%.)
void readPair(uint64_t* stamp, int64_t* ns) {
  int64_t narrowest = INT64_MAX;
  for (int i = 0; i < 5; ++i) {
    const int64_t before = steadyNs();
    const uint64_t s = cycleStamp();
    const int64_t after = steadyNs();
    if (after - before < narrowest) {
      narrowest = after - before;
      *stamp = s;
      *ns = before + (after - before) / 2;
    }
  }
}

const Calibration& calibration() {
  static const Calibration c = [] {
    Calibration k;
    if (!kUsesTsc) return k;  // stamps are steady_clock nanoseconds already
    readPair(&k.stamp0, &k.ns0);
    uint64_t stamp1 = k.stamp0;
    int64_t ns1 = k.ns0;
    while (ns1 - k.ns0 < 2000000) readPair(&stamp1, &ns1);  // 2 ms: ~30 ns of error is 1.5e-5
    k.nsPerTick = static_cast<double>(ns1 - k.ns0) / static_cast<double>(stamp1 - k.stamp0);
    return k;
  }();
  return c;
}

}  // namespace

uint64_t cycleStamp() {
#if defined(__x86_64__)
  if (kUsesTsc) return __rdtsc();
#endif
  return static_cast<uint64_t>(steadyNs());
}

int64_t cycleTicksToNs(uint64_t ticks) {
  if (!kUsesTsc) return static_cast<int64_t>(ticks);
  return static_cast<int64_t>(static_cast<double>(ticks) * calibration().nsPerTick);
}

int64_t cycleStampToSteadyNs(uint64_t stamp) {
  if (!kUsesTsc) return static_cast<int64_t>(stamp);
  const Calibration& c = calibration();
  const double ticks = static_cast<double>(static_cast<int64_t>(stamp - c.stamp0));
  return c.ns0 + static_cast<int64_t>(ticks * c.nsPerTick);
}

void cycleClockCalibrate() { (void)calibration(); }

bool cycleClockUsesTsc() { return kUsesTsc; }

}  // namespace weft
