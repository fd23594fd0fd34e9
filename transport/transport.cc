#include "transport/transport.h"

#include "common/status.h"

namespace weft {

namespace {
ncclResult_t rangesUnsupported(const Connection& c, const char* what) {
  return fail(ncclInvalidUsage, "%s: registered-memory transfers are not supported by %s", what, c.transportName());
}
}  // namespace

RingGeometry ringGeometryFromEnv(Setting slotBytes, Setting slots) {
  return RingGeometry{settingSize(slotBytes), static_cast<uint32_t>(settingInt(slots))};
}

std::string printablePeerFailure(const char* text, size_t bytes) {
  std::string printable(text, std::min(bytes, kPeerFailureBytes));
  for (char& c : printable)
    if (c < 0x20 || c > 0x7e) c = '?';
  return printable;
}

ncclResult_t Connection::registerMemory(void*, size_t, MemoryHandle*) {
  return rangesUnsupported(*this, "registerMemory");
}
ncclResult_t Connection::deregisterMemory(MemoryHandle) { return rangesUnsupported(*this, "deregisterMemory"); }
ncclResult_t Connection::postSendRange(MemoryHandle, size_t, size_t, RangeRequest*) {
  return rangesUnsupported(*this, "postSendRange");
}
ncclResult_t Connection::postRecvRange(MemoryHandle, size_t, size_t, RangeRequest*) {
  return rangesUnsupported(*this, "postRecvRange");
}
ncclResult_t Connection::testRange(RangeRequest, bool*) { return rangesUnsupported(*this, "testRange"); }

ncclResult_t Connection::sendFrom(const void*, size_t, bool* done) {
  *done = false;
  return fail(ncclInvalidUsage, "sendFrom: %s has no in-place messages", transportName());
}
ncclResult_t Connection::recvInto(void*, size_t, size_t* got, bool* done) {
  *got = 0;
  *done = false;
  return fail(ncclInvalidUsage, "recvInto: %s has no in-place messages", transportName());
}

ncclResult_t Connection::mailboxPost(uint64_t, const void*, size_t) {
  return fail(ncclInvalidUsage, "mailboxPost: %s has no mailbox", transportName());
}
ncclResult_t Connection::mailboxPeek(uint64_t, const void** data, size_t*) {
  *data = nullptr;
  return fail(ncclInvalidUsage, "mailboxPeek: %s has no mailbox", transportName());
}

ncclResult_t Connection::copyOutNextMessage(void* data, size_t bytes, size_t* got, bool* done) {
  const void* message = nullptr;
  WEFT_CHECK(recvPeek(&message, got));
  if (!message || *got != bytes) return ncclSuccess;
  memcpy(data, message, bytes);
  recvRelease();
  *done = true;
  return ncclSuccess;
}

}  // namespace weft
