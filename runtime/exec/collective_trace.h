// WEFT_TRACE=FILE: every finished collective of every communicator of this process, as a
// Chrome/Perfetto trace-event file (chrome://tracing, ui.perfetto.dev). One process track per
// rank (named with its host and pid), one thread track per communicator with a span per
// collective (its size, algorithm and bytes per peer), and one thread track per communicator
// and peer -- weft's channels are its connections -- with a span per step of the schedule (from
// when its first slice could start to when its last was done) and one for the steps with no
// peer. Times are wall-clock microseconds on the clock of the communicator's rank 0 (an offset
// measured after the first call, for ranks on other hosts), so the files of a job's ranks open
// on one time line; `weft-info trace merge` joins them into one file. The file is rewritten
// whole at each ncclCommDestroy / ncclCommAbort.
#pragma once

#include <cstdint>

#include "nccl.h"

#include "runtime/exec/collective_record.h"

namespace weft {

// Whether WEFT_TRACE is set (read once per process).
bool collectiveTraceEnabled();
struct Schedule;

// A rank's wall clock against its communicator's rank 0's, measured once per communicator
// (runtime/status/remote_status.h: clockOffsetToRankZero): the trace puts every rank's events
// on rank 0's time line, so that the files of a job's ranks on several hosts line up.
struct TraceClock {
  bool measured = false;
  int64_t offsetNs = 0;     // rank 0's clock minus this one's
  int64_t roundTripNs = 0;  // of the best probe (the offset's error is at most half); 0: not measured
};

// Adds a finished record of `rank` (of `nranks`) on the communicator `commId` (its hash) and,
// with `schedule` and its `stepStamps` (CollectiveRun::timeSteps), a span per step.
void traceCollective(const CollectiveRecord& record, int rank, int nranks, uint64_t commId, const TraceClock& clock,
                     const Schedule* schedule = nullptr, const uint64_t* stepStamps = nullptr);
// Writes the file (atomically replaced); ncclSuccess when tracing is off.
ncclResult_t flushCollectiveTrace();

}  // namespace weft
