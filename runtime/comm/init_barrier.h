// The end of a communicator's initialization, reached by all its ranks together: no rank
// returns from ncclCommInitRank (or a split or shrink) before every rank has connected to its
// ring neighbours. Without it a rank could return and exit while a neighbour was still setting
// up its side of their connection (shared memory fetches the peer's segment from the peer's
// process), and that neighbour's initialization would fail after the rank's own had succeeded.
#pragma once

#include "common/deadline.h"
#include "nccl.h"

struct ncclComm;

namespace weft {

// Two passes of a message around the ring (`prev` and `next` are this rank's neighbours,
// already connected): the first tells the ring's first rank that every rank has arrived, the
// second tells every other rank.
ncclResult_t finishInitializationTogether(ncclComm* comm, int prev, int next, const Deadline& deadline);

}  // namespace weft
