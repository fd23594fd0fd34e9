#include "runtime/comm/shrink_rendezvous.h"

#include <cstring>

#include "common/log.h"
#include "common/status.h"
#include "runtime/comm/communicator.h"
#include "runtime/comm/control_message.h"

namespace weft {

namespace {

constexpr uint64_t kShrinkKind = 0x7765667453484b31ull;  // "weftSHK1"

struct ShrinkMessage {
  ControlMarker marker;
  uint64_t shrinkSequence;
  ncclUniqueId id;
};

}  // namespace

ncclResult_t sendShrinkId(ncclComm* parent, int peer, uint64_t shrinkSequence, const ncclUniqueId& id,
                          const Deadline& deadline) {
  ShrinkMessage message{};
  message.marker = controlMarker(parent, kShrinkKind);
  message.shrinkSequence = shrinkSequence;
  message.id = id;
  return sendControlMessage(parent, peer, &message, sizeof message, deadline, "ncclCommShrink: sending the new id to");
}

ncclResult_t receiveShrinkId(ncclComm* parent, int peer, uint64_t shrinkSequence, ncclUniqueId* id,
                             const Deadline& deadline) {
  const ControlMarker marker = controlMarker(parent, kShrinkKind);
  auto isTheId = [&](const void* data, size_t bytes) {
    ShrinkMessage got{};
    if (bytes != sizeof got) return false;
    std::memcpy(&got, data, sizeof got);
    if (!(got.marker == marker) || got.shrinkSequence != shrinkSequence) return false;
    *id = got.id;
    return true;
  };
  size_t dropped = 0;
  WEFT_CHECK(
      receiveControlMessage(parent, peer, isTheId, deadline, "ncclCommShrink: waiting for the new id from", &dropped));
  if (dropped)
    WEFT_INFO(kLogInit, "ncclCommShrink: dropped %zu message(s) an earlier call left from rank %d", dropped, peer);
  return ncclSuccess;
}

}  // namespace weft
