"""The VM's placement phase, for the perf tools that time runs against each other.

This VM's host sometimes places its two vCPUs far apart for minutes: the cache-line round trip
between them (build/perf/memcpy_bandwidth's last line) is then 310-330 ns instead of 50-56, and
everything that crosses CPUs slows down (shared memory by 2-8x, UCX's large messages between
namespace hosts by about 2x) while memcpy does not (docs/developer-notes.md). Timings compare
only within one phase: PhaseGuard brackets each measurement by the round trip and measures
again while it is above SLOW_PHASE_NS.

Run as a script (`vm_phase.py BUILD_DIR`) it prints the round trip in ns (for shell scripts).
"""
import re
import subprocess
import sys

SLOW_PHASE_NS = 100
PHASE_TRIES = 3


def round_trip_ns(build):
    """The cache-line round trip between the first two CPUs this process may use (40 ms: a 1 MiB
    copy, then the ping-pong), or None where it is not measured (one CPU)."""
    out = subprocess.run([f"{build}/perf/memcpy_bandwidth", str(1 << 20), "1"], check=True, capture_output=True,
                         text=True).stdout
    m = re.search(r"cache-line round trip between CPUs \d+ and \d+: (\d+) ns", out)
    return int(m.group(1)) if m else None


class PhaseGuard:
    """Runs measurements bracketed by the round trip: one with a round trip above SLOW_PHASE_NS
    before or after it runs again, up to PHASE_TRIES times in all, and the last is kept.
    Measurements run back to back, so the round trip after one is the one before the next.
    `off_because`, when given, turns the check off and says why in the summary."""

    def __init__(self, build, off_because=None):
        self.build = build
        self.off_because = off_because
        self.redone = 0
        self.kept_slow = 0
        self.last = None  # the round trip measured after the previous measurement

    def measure(self, measure_once):
        for attempt in range(PHASE_TRIES):
            before = self.last if self.last is not None else self._round_trip()
            result = measure_once()
            self.last = self._round_trip()
            if before is None or self.last is None or max(before, self.last) <= SLOW_PHASE_NS:
                return result
            if attempt + 1 < PHASE_TRIES:
                self.redone += 1
        self.kept_slow += 1
        return result

    def _round_trip(self):
        return None if self.off_because else round_trip_ns(self.build)

    def summary(self):
        if self.off_because:
            return f"# VM placement phase: not checked ({self.off_because})"
        return (f"# VM placement phase: {self.redone} runs redone (cache-line round trip above {SLOW_PHASE_NS} ns "
                f"before or after), {self.kept_slow} kept from the slow phase after {PHASE_TRIES} tries")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: vm_phase.py BUILD_DIR")
    ns = round_trip_ns(sys.argv[1])
    print("not measured" if ns is None else ns)
