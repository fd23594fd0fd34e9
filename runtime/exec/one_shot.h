// One-shot all-reduce: a small all-reduce between ranks on one host in a single exchange, with
// no schedule. Every rank posts its input into each peer's mailbox (shared memory, written where
// the peer reads it: Connection::mailboxPost), then reduces all the inputs in rank order, so
// every rank computes the same bits. A call costs each peer one cache-line handover for up to
// 48 bytes, where a schedule costs ring messages, their acknowledgements and executor passes;
// WEFT_ONE_SHOT_MAX_BYTES is where the schedules catch up (docs/performance.md).
//
// Why two mailboxes per pair suffice: a rank's message n + 2 overwrites its message n. The rank
// posts n + 2 only after finishing call n + 1, that is after taking every peer's message n + 1;
// each peer posted that only after finishing call n, that is after reading message n.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "nccl.h"
#include "runtime/exec/collective.h"
#include "runtime/exec/collective_record.h"

namespace weft {

class Connection;
class IdleWaiter;

// What a communicator keeps from one one-shot call to the next (nothing is allocated per call).
struct OneShotState {
  uint64_t sequence = 0;             // one-shot calls so far: the mailboxes' call number
  std::vector<Connection*> peers;    // by rank, null for this rank; empty until the first call
  std::vector<char> accumulator;     // the running sum with three ranks or more
  std::vector<PeerTraffic> traffic;  // what the collective record counts, for calls of trafficBytes
  size_t trafficBytes = 0;
};

// Depends only on what every rank agrees on (the call, the layout, the agreed settings), so
// every rank takes the same path: an all-reduce of 1 byte to WEFT_ONE_SHOT_MAX_BYTES with a
// built-in operator, every rank on this host and joined by shared memory, no algorithm forced
// (WEFT_ALGO, NCCL_ALGO) and no compression.
bool oneShotEligible(const CollectiveCall& call);
// Whether the call takes the one-shot exchange: eligible, and alone on its communicator in its
// group (CollectiveCall::callsInGroup), which every rank sees alike however it batches its calls.
bool takesOneShot(const CollectiveCall& call);
// Connects every peer on the first call (each must have a mailbox) and sets *traffic to what
// the call's record counts.
ncclResult_t prepareOneShot(const CollectiveCall& call, const std::vector<PeerTraffic>** traffic);
// The exchange and the reduction into call.recvbuff. `recordSequence` is the call's number in
// the communicator's record and live status.
ncclResult_t runOneShotAllReduce(const CollectiveCall& call, uint64_t recordSequence, IdleWaiter* waiter);

}  // namespace weft
