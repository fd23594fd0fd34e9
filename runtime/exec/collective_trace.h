// WEFT_TRACE=FILE: every finished collective of every communicator of this process, as a
// Chrome/Perfetto trace-event file (chrome://tracing, ui.perfetto.dev). One process track per
// rank (named with its host and pid), one thread track per communicator; a span per collective
// with its size, algorithm and bytes per peer. Times are wall-clock microseconds, so the files
// of several ranks open on one time line (on one host exactly; across hosts as well as their
// clocks agree). The file is rewritten whole at each ncclCommDestroy / ncclCommAbort.
#pragma once

#include <cstdint>

#include "runtime/exec/collective_record.h"

namespace weft {

// Whether WEFT_TRACE is set (read once per process).
bool collectiveTraceEnabled();
// Adds a finished record of `rank` (of `nranks`) on the communicator `commId` (its hash).
void traceCollective(const CollectiveRecord& record, int rank, int nranks, uint64_t commId);
// Writes the file (atomically replaced); ncclSuccess when tracing is off.
ncclResult_t flushCollectiveTrace();

}  // namespace weft
