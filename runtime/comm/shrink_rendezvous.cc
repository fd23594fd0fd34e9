#include "runtime/comm/shrink_rendezvous.h"

#include <cstring>
#include <thread>

#include "common/log.h"
#include "common/status.h"
#include "runtime/comm/communicator.h"

namespace weft {

namespace {

struct ShrinkMessage {
  uint64_t marker[2];
  uint64_t shrinkSequence;
  ncclUniqueId id;
};

ShrinkMessage messageFor(const ncclComm* parent, uint64_t shrinkSequence) {
  ShrinkMessage message{};
  // The token is random and known to the parent's ranks only; no collective sends it.
  message.marker[0] = parent->layout.commToken[0] ^ 0x7765667453484b31ull;  // "weftSHK1"
  message.marker[1] = parent->layout.commToken[1];
  message.shrinkSequence = shrinkSequence;
  return message;
}

ncclResult_t connectionTo(ncclComm* parent, int peer, Connection** out) {
  WEFT_CHECK(connectPeers(parent, {peer}));
  *out = parent->net.connectionTable[peer];
  if (!*out) return fail(ncclInternalError, "ncclCommShrink: no connection to rank %d", peer);
  return ncclSuccess;
}

// Between polls: the peer may be a process that has not reached its shrink yet.
void waitAMoment() { std::this_thread::sleep_for(std::chrono::microseconds(50)); }

ncclResult_t timedOut(const char* what, int peer) {
  return fail(ncclRemoteError, "ncclCommShrink: timed out %s rank %d (WEFT_TIMEOUT)", what, peer);
}

}  // namespace

ncclResult_t sendShrinkId(ncclComm* parent, int peer, uint64_t shrinkSequence, const ncclUniqueId& id,
                          const Deadline& deadline) {
  Connection* connection = nullptr;
  WEFT_CHECK(connectionTo(parent, peer, &connection));
  ShrinkMessage message = messageFor(parent, shrinkSequence);
  message.id = id;
  for (;;) {
    WEFT_CHECK(connection->progress());
    void* buffer = nullptr;
    WEFT_CHECK(connection->sendBuffer(sizeof message, &buffer));
    if (buffer) {
      std::memcpy(buffer, &message, sizeof message);
      WEFT_CHECK(connection->sendCommit(sizeof message));
      break;
    }
    WEFT_CHECK(connection->checkPeer());
    if (deadline.expired()) return timedOut("sending the new id to", peer);
    waitAMoment();
  }
  for (;;) {  // until it has left this rank (TCP may still queue it)
    WEFT_CHECK(connection->progress());
    if (!connection->hasPendingSends()) return ncclSuccess;
    if (deadline.expired()) return timedOut("sending the new id to", peer);
    waitAMoment();
  }
}

ncclResult_t receiveShrinkId(ncclComm* parent, int peer, uint64_t shrinkSequence, ncclUniqueId* id,
                             const Deadline& deadline) {
  Connection* connection = nullptr;
  WEFT_CHECK(connectionTo(parent, peer, &connection));
  const ShrinkMessage expected = messageFor(parent, shrinkSequence);
  size_t dropped = 0;
  for (;;) {
    WEFT_CHECK(connection->progress());
    const void* data = nullptr;
    size_t bytes = 0;
    WEFT_CHECK(connection->recvPeek(&data, &bytes));
    if (data) {
      ShrinkMessage got{};
      if (bytes == sizeof got) std::memcpy(&got, data, sizeof got);
      connection->recvRelease();
      const bool isIt = got.marker[0] == expected.marker[0] && got.marker[1] == expected.marker[1] &&
                        got.shrinkSequence == expected.shrinkSequence;
      if (isIt) {
        *id = got.id;
        if (dropped)
          WEFT_INFO(kLogInit, "ncclCommShrink: dropped %zu message(s) an earlier call left from rank %d", dropped,
                    peer);
        return ncclSuccess;
      }
      ++dropped;
      continue;
    }
    WEFT_CHECK(connection->checkPeer());
    if (deadline.expired()) return timedOut("waiting for the new id from", peer);
    waitAMoment();
  }
}

}  // namespace weft
