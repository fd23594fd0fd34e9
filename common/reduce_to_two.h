// One reduction written to two places: the direct all-reduce's single pass, in which each rank
// reduces its chunk out of every rank's send buffer and writes the result into its own and
// its peer's receive buffer (algorithms/builders/direct_allreduce.h); and a ring's received
// chunk reduced into its destination and the send slot that forwards it (the executor's
// reduceAndForward).
#pragma once

#include <cstddef>

#include "common/reduce.h"

namespace weft {

// dst[i] = dst2[i] = a[i] op b[i] for i < count. Each destination may be the same pointer as a
// or b (never a partial overlap); the two destinations are distinct. `streaming`: both are
// written with non-temporal stores, so neither is read first (no read-for-ownership) nor left in
// cache: for ranges too large to be read back from cache, this moves 2 bytes per byte of result
// where reduce-then-copy moves 3. Line by line where both destinations sit at the same offset
// within a 64-byte line (reduceLinesToTwoStreaming), else 1 KiB tiles. Ends with a fence.
void reduceToTwo(void* dst, void* dst2, const void* a, const void* b, size_t count, ncclDataType_t type, ReduceOp op,
                 bool streaming);

}  // namespace weft
