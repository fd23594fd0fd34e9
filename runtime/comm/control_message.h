// Messages a communicator sends outside any collective (a shrink's new id, the end of
// initialization): one small message over a peer's connection, sent or awaited with a
// deadline. Each kind begins with its own marker, derived from the communicator's secret token,
// which no collective sends; a receiver drops whatever precedes the message it waits for (a
// failed or revoked collective may have left messages behind).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "common/deadline.h"
#include "nccl.h"

struct ncclComm;

namespace weft {

// The marker for messages of `kind` (an ASCII tag such as "weftSHK1") on this communicator.
struct ControlMarker {
  uint64_t words[2];
};
ControlMarker controlMarker(const ncclComm* comm, uint64_t kind);
bool operator==(const ControlMarker& a, const ControlMarker& b);

// Sends `bytes` of `message` to `peer` (connecting first if need be) and waits until it has
// left this rank. `what` names the wait in the time-out's error ("ncclCommShrink: sending the
// new id to").
ncclResult_t sendControlMessage(ncclComm* comm, int peer, const void* message, size_t bytes, const Deadline& deadline,
                                const char* what);
// Receives messages from `peer` until `accept` takes one (it sees each message's bytes and says
// whether it is the one awaited); *dropped counts the others.
ncclResult_t receiveControlMessage(ncclComm* comm, int peer, const std::function<bool(const void*, size_t)>& accept,
                                   const Deadline& deadline, const char* what, size_t* dropped);

}  // namespace weft
