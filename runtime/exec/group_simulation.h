// ncclGroupSimulateEnd: what the queued group would cost, from the communicator's cost model,
// without running it.
#pragma once

#include <vector>

#include "runtime/exec/collective.h"

namespace weft {

// Predicted microseconds for the calls, one after another per communicator, communicators in
// parallel (the longest one counts).
double predictGroupMicroseconds(const std::vector<CollectiveCall>& calls);

}  // namespace weft
