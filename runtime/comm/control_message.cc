#include "runtime/comm/control_message.h"

#include <cstring>
#include <thread>

#include "common/status.h"
#include "runtime/comm/communicator.h"

namespace weft {

namespace {

ncclResult_t connectionTo(ncclComm* comm, int peer, Connection** out) {
  WEFT_CHECK(connectPeers(comm, {peer}));
  *out = comm->net.connectionTable[peer];
  if (!*out) return fail(ncclInternalError, "rank %d: no connection to rank %d", comm->rank, peer);
  return ncclSuccess;
}

// Between polls: the peer may be a process that has not got this far yet.
void waitAMoment() { std::this_thread::sleep_for(std::chrono::microseconds(50)); }

ncclResult_t timedOut(const ncclComm* comm, const char* what, int peer, const Deadline& deadline) {
  if (deadline.cancelled())
    return fail(ncclInvalidUsage, "rank %d: %s rank %d stopped: the communicator was aborted", comm->rank, what, peer);
  return fail(ncclRemoteError, "rank %d: timed out %s rank %d (WEFT_TIMEOUT)", comm->rank, what, peer);
}

}  // namespace

ControlMarker controlMarker(const ncclComm* comm, uint64_t kind) {
  // The token is random and known to this communicator's ranks only.
  return {{comm->layout.commToken[0] ^ kind, comm->layout.commToken[1]}};
}

bool operator==(const ControlMarker& a, const ControlMarker& b) {
  return a.words[0] == b.words[0] && a.words[1] == b.words[1];
}

ncclResult_t sendControlMessage(ncclComm* comm, int peer, const void* message, size_t bytes, const Deadline& deadline,
                                const char* what) {
  Connection* connection = nullptr;
  WEFT_CHECK(connectionTo(comm, peer, &connection));
  for (;;) {
    WEFT_CHECK(connection->progress());
    void* buffer = nullptr;
    WEFT_CHECK(connection->sendBuffer(bytes, &buffer));
    if (buffer) {
      std::memcpy(buffer, message, bytes);
      WEFT_CHECK(connection->sendCommit(bytes));
      break;
    }
    WEFT_CHECK(connection->checkPeer());
    if (deadline.expired()) return timedOut(comm, what, peer, deadline);
    waitAMoment();
  }
  for (;;) {  // until it has left this rank (TCP may still queue it)
    WEFT_CHECK(connection->progress());
    if (!connection->hasPendingSends()) return ncclSuccess;
    if (deadline.expired()) return timedOut(comm, what, peer, deadline);
    waitAMoment();
  }
}

ncclResult_t receiveControlMessage(ncclComm* comm, int peer, const std::function<bool(const void*, size_t)>& accept,
                                   const Deadline& deadline, const char* what, size_t* dropped) {
  Connection* connection = nullptr;
  WEFT_CHECK(connectionTo(comm, peer, &connection));
  *dropped = 0;
  for (;;) {
    WEFT_CHECK(connection->progress());
    const void* data = nullptr;
    size_t bytes = 0;
    WEFT_CHECK(connection->recvPeek(&data, &bytes));
    if (data) {
      const bool isIt = accept(data, bytes);
      connection->recvRelease();
      if (isIt) return ncclSuccess;
      ++*dropped;
      continue;
    }
    WEFT_CHECK(connection->checkPeer());
    if (deadline.expired()) return timedOut(comm, what, peer, deadline);
    waitAMoment();
  }
}

}  // namespace weft
