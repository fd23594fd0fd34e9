// How the survivors of ncclCommShrink agree on the new communicator's unique id: the lowest
// survivor sends it to each of the others over the parent's connections. A collective that
// failed or was revoked may have left messages in those connections (sent but never received,
// or still queued at the sender), so the id travels as one message that begins with a marker
// no collective sends (derived from the parent's secret token and the shrink's sequence
// number), and the receiver drops every message before it.
#pragma once

#include <cstdint>

#include "common/deadline.h"
#include "nccl.h"

struct ncclComm;

namespace weft {

// Sends `id` to `peer` and waits until it has left this rank.
ncclResult_t sendShrinkId(ncclComm* parent, int peer, uint64_t shrinkSequence, const ncclUniqueId& id,
                          const Deadline& deadline);
// Receives the id `peer` sent for shrink number `shrinkSequence`, dropping what precedes it.
ncclResult_t receiveShrinkId(ncclComm* parent, int peer, uint64_t shrinkSequence, ncclUniqueId* id,
                             const Deadline& deadline);

}  // namespace weft
