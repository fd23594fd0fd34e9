#include "algorithms/schedule.h"

#include <cstdio>
#include <numeric>

namespace weft {

bool sendsToPeer(const Step& step) {
  return step.kind == StepKind::Send || step.kind == StepKind::Notify || step.kind == StepKind::EncodeSend ||
         step.kind == StepKind::SendEncoded;
}

const char* stepKindName(StepKind kind) {
  switch (kind) {
    case StepKind::Send: return "send";
    case StepKind::Recv: return "recv";
    case StepKind::RecvReduce: return "recvReduce";
    case StepKind::Copy: return "copy";
    case StepKind::Divide: return "divide";
    case StepKind::Scale: return "scale";
    case StepKind::Reduce: return "reduce";
    case StepKind::Notify: return "notify";
    case StepKind::WaitNotify: return "waitNotify";
    case StepKind::ToFloat: return "toFloat";
    case StepKind::FromFloat: return "fromFloat";
    case StepKind::EncodeSend: return "encodeSend";
    case StepKind::RecvDecodeAdd: return "recvDecodeAdd";
    case StepKind::RecvEncoded: return "recvEncoded";
    case StepKind::SendEncoded: return "sendEncoded";
    case StepKind::Decode: return "decode";
    case StepKind::DecodeAdd: return "decodeAdd";
  }
  return "?";
}

namespace {
const char* bufferName(BufferKind kind) {
  switch (kind) {
    case BufferKind::Send: return "send";
    case BufferKind::Recv: return "recv";
    case BufferKind::Scratch: return "scratch";
  }
  return "?";
}

std::string rangeText(const BufferRange& range) {
  char text[112];
  if (range.owner >= 0)
    snprintf(text, sizeof(text), "rank%d.%s[%zu,+%zu)", range.owner, bufferName(range.buffer), range.offset,
             range.bytes);
  else
    snprintf(text, sizeof(text), "%s[%zu,+%zu)", bufferName(range.buffer), range.offset, range.bytes);
  return text;
}
}  // namespace

std::string Schedule::toString() const {
  std::string out;
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    char head[64];
    snprintf(head, sizeof(head), "%3zu %-10s", i, stepKindName(s.kind));
    out += head;
    if (s.peer >= 0) out += " peer " + std::to_string(s.peer);
    bool readsSrc = s.kind != StepKind::Recv && !isFence(s.kind) && (!isCodecStep(s.kind) || s.src.bytes);
    bool writesDst = s.kind != StepKind::Send && !isFence(s.kind) && (!isCodecStep(s.kind) || s.dst.bytes);
    if (readsSrc) out += " " + rangeText(s.src);
    if (s.kind == StepKind::Reduce) out += " + " + rangeText(s.src2);
    if (isCodecStep(s.kind) && s.src2.bytes) out += " encoded " + rangeText(s.src2);
    if (writesDst) out += " -> " + rangeText(s.dst);
    if (s.dst2.bytes) out += " and " + rangeText(s.dst2);
    out += "\n";
  }
  return out;
}

void shiftRanges(Step* step, size_t userShift, size_t scratchShift) {
  for (BufferRange* range : {&step->src, &step->dst, &step->src2, &step->dst2})
    if (range->bytes) range->offset += range->buffer == BufferKind::Scratch ? scratchShift : userShift;
}

std::vector<int> orderOrIdentity(const std::vector<int>& order, int nranks) {
  if (!order.empty()) return order;
  std::vector<int> identity(nranks > 0 ? nranks : 1);
  std::iota(identity.begin(), identity.end(), 0);
  return identity;
}

}  // namespace weft
