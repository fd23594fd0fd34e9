#include "runtime/comm/init_barrier.h"

#include <cstring>

#include "common/status.h"
#include "runtime/comm/communicator.h"
#include "runtime/comm/control_message.h"

namespace weft {

namespace {

constexpr uint64_t kArrivedKind = 0x77656674494e4931ull;   // "weftINI1"
constexpr uint64_t kReleasedKind = 0x77656674494e4932ull;  // "weftINI2"

// The ring's first rank sends and then waits for the message to come back; every other rank
// waits for it from `prev` and passes it on to `next`.
ncclResult_t passAroundTheRing(ncclComm* comm, bool first, int prev, int next, uint64_t kind,
                               const Deadline& deadline) {
  const ControlMarker marker = controlMarker(comm, kind);
  auto isIt = [&](const void* data, size_t bytes) {
    return bytes == sizeof marker && std::memcmp(data, &marker, sizeof marker) == 0;
  };
  const char* sending = "initialization: telling the end of initialization to";
  const char* waiting = "initialization: waiting for the end of initialization from";
  size_t dropped = 0;
  if (first) WEFT_CHECK(sendControlMessage(comm, next, &marker, sizeof marker, deadline, sending));
  WEFT_CHECK(receiveControlMessage(comm, prev, isIt, deadline, waiting, &dropped));
  if (!first) WEFT_CHECK(sendControlMessage(comm, next, &marker, sizeof marker, deadline, sending));
  return ncclSuccess;
}

}  // namespace

ncclResult_t finishInitializationTogether(ncclComm* comm, int prev, int next, const Deadline& deadline) {
  const bool first = comm->layout.ringOrder.front() == comm->rank;
  WEFT_CHECK(passAroundTheRing(comm, first, prev, next, kArrivedKind, deadline));
  return passAroundTheRing(comm, first, prev, next, kReleasedKind, deadline);
}

}  // namespace weft
