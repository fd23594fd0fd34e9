// A clock for hot paths: the CPU's invariant time-stamp counter where it has one (one rdtsc,
// about 11 ns on this project's VMs against 28 ns for steady_clock::now), else steady_clock.
// Stamps convert to steady_clock nanoseconds with a rate measured once per process (a 2 ms
// window the first time a stamp is converted or cycleClockCalibrate is called).
#pragma once

#include <cstdint>

namespace weft {

// A raw stamp: comparable only with other stamps of this process.
uint64_t cycleStamp();
// The steady_clock time (ns since its epoch) of a stamp.
int64_t cycleStampToSteadyNs(uint64_t stamp);
// A difference of two stamps in nanoseconds.
int64_t cycleTicksToNs(uint64_t ticks);
// Measures the rate now (otherwise at the first conversion); cheap after the first call.
void cycleClockCalibrate();
// Whether stamps come from the time-stamp counter (false: steady_clock itself).
bool cycleClockUsesTsc();

}  // namespace weft
