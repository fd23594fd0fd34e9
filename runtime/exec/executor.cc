#include "runtime/exec/executor.h"

#include <algorithm>
#include <cstring>

#include "common/cycle_clock.h"
#include "common/dtype.h"
#include "common/reduce_to_two.h"
#include "common/status.h"
#include "common/streaming_copy.h"
#include "compression/cast.h"
#include "compression/codec.h"

namespace weft {

namespace {

bool usesPeer(const Step& step) { return step.peer >= 0; }
// Codec steps' encoded ranges (src2): which kinds read them and which write them.
bool readsEncoded(const Step& step) {
  return step.kind == StepKind::SendEncoded || step.kind == StepKind::Decode || step.kind == StepKind::DecodeAdd;
}
bool writesEncoded(const Step& step) {
  return step.kind == StepKind::EncodeSend || step.kind == StepKind::RecvDecodeAdd ||
         step.kind == StepKind::RecvEncoded;
}

// A range written this large (or a call receiving this much) will not be read back from cache:
// write it with streaming stores.
constexpr size_t kStreamingRangeBytes = 4 << 20;

// Slices at least this large go in place where the connection can (Connection::sendFrom,
// recvInto): the staging copy is saved; below it a message rides in one slot write.
constexpr size_t kInPlaceMinBytes = 16 << 10;
bool movesInPlace(const Connection* c, size_t bytes) { return bytes >= kInPlaceMinBytes && c->transfersInPlace(); }

// The step with its ranges named as the call's buffers are: when the send buffer is the
// receive buffer, its ranges are Recv ranges, so that hazards between the two are seen.
Step withAliasedBuffers(Step step, bool sendAliasesRecv) {
  if (!sendAliasesRecv) return step;
  for (BufferRange* range : {&step.src, &step.dst, &step.src2, &step.dst2})
    if (range->buffer == BufferKind::Send) range->buffer = BufferKind::Recv;
  return step;
}

// The Send that forwards what RecvReduce step i writes, unchanged and slice for slice: the
// first later step that touches i's destination, when it is a Send of exactly that range
// waiting on i slice by slice and cut into as many slices; -1 otherwise. `named`: the steps as
// withAliasedBuffers names them.
int32_t forwardingSend(const std::vector<Step>& named, const PreparedSchedule& plan, size_t i) {
  const Step& reduce = named[i];
  for (size_t j = i + 1; j < named.size(); ++j) {
    const Step& s = named[j];
    if (isFence(s.kind)) return -1;
    if (s.kind == StepKind::Send && s.src == reduce.dst) {
      const auto& deps = plan.dependencies[j];
      bool waitsSliceBySlice = std::any_of(deps.begin(), deps.end(), [&](const PreparedSchedule::Dependency& d) {
        return d.step == i && d.sliceAligned;
      });
      return waitsSliceBySlice && plan.sliceCounts[j] == plan.sliceCounts[i] ? static_cast<int32_t>(j) : -1;
    }
    if (readsWhatWrites(s, reduce) || writesWhatWrites(s, reduce)) return -1;
  }
  return -1;
}

}  // namespace

void prepareSchedule(Schedule schedule, bool sendAliasesRecv, size_t sliceBytes, PreparedSchedule* out) {
  // Compressed schedules slice every step at a whole number of codec slices (their encoded
  // size, not this, is what must fit a transport slot; the builder saw to that).
  if (schedule.codecSliceElements) sliceBytes = schedule.codecSliceElements * sizeof(float);
  out->schedule = std::move(schedule);
  out->sliceBytes = sliceBytes;
  out->traffic = trafficOf(out->schedule);
  const auto& steps = out->schedule.steps;
  size_t receivedBytes = 0;
  for (const Step& s : steps)
    if (s.kind == StepKind::Recv) receivedBytes += s.dst.bytes;
  out->streamsReceives = receivedBytes >= kStreamingRangeBytes;
  out->dependencies.assign(steps.size(), {});
  out->sliceCounts.resize(steps.size());
  std::vector<Step> named;
  named.reserve(steps.size());
  for (const Step& step : steps) named.push_back(withAliasedBuffers(step, sendAliasesRecv));
  int lastFence = -1;
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    size_t bytes = s.kind == StepKind::Recv ? s.dst.bytes : s.src.bytes;
    out->sliceCounts[i] = isFence(s.kind) ? 1 : static_cast<uint32_t>((bytes + sliceBytes - 1) / sliceBytes);
    if (isCodecStep(s.kind)) {
      size_t stride = out->schedule.encodedSliceBytes;
      out->sliceCounts[i] = isEncodedOnly(s.kind)
                                ? static_cast<uint32_t>(stride ? (s.src2.bytes + stride - 1) / stride : 0)
                                : static_cast<uint32_t>((codecFloatRange(s).bytes + sliceBytes - 1) / sliceBytes);
    }
    if (isFence(s.kind)) {
      // A fence waits for everything before it; everything after it waits for it.
      for (size_t j = 0; j < i; ++j) out->dependencies[i].push_back({static_cast<uint32_t>(j), false});
      lastFence = static_cast<int>(i);
      continue;
    }
    if (lastFence >= 0) out->dependencies[i].push_back({static_cast<uint32_t>(lastFence), false});
    const Step& a = named[i];
    bool channelSeen = false;
    for (size_t j = i; j-- > static_cast<size_t>(lastFence + 1);) {
      const Step& t = steps[j];
      const Step& b = named[j];
      bool raw = readsWhatWrites(a, b);
      bool waw = writesWhatWrites(a, b);
      bool war = readsWhatWrites(b, a);
      // Encoded ranges (codec steps, scratch only).
      bool rawEncoded = readsEncoded(s) && writesEncoded(t) && s.src2.overlaps(t.src2);
      bool wawEncoded = writesEncoded(s) && writesEncoded(t) && s.src2.overlaps(t.src2);
      bool warEncoded = writesEncoded(s) && readsEncoded(t) && s.src2.overlaps(t.src2);
      bool encodedHazard = rawEncoded || wawEncoded || warEncoded;
      // Messages on one channel (peer, direction) must leave and arrive in schedule order. Only
      // a step that moves a message counts: an empty one is done at once, whatever came before.
      bool channel = !channelSeen && usesPeer(s) && t.peer == s.peer && sendsToPeer(s) == sendsToPeer(t) &&
                     out->sliceCounts[j] > 0;
      if (channel) channelSeen = true;
      if (!(raw || waw || war || channel || encodedHazard)) continue;
      bool aligned = !channel;
      // Codec steps slice by elements, others by bytes: only steps of one kind of slicing align.
      aligned &= isCodecStep(s.kind) == isCodecStep(t.kind);
      if (encodedHazard) aligned &= s.src2 == t.src2;
      aligned &= !a.dst2.bytes && !b.dst2.bytes;  // a second destination: order the whole steps
      if (raw) aligned &= a.src == b.dst && (a.kind != StepKind::Reduce || !a.src2.overlaps(b.dst) || a.src2 == b.dst);
      if (waw) aligned &= a.dst == b.dst;
      if (war) aligned &= a.dst == b.src && (b.kind != StepKind::Reduce || !a.dst.overlaps(b.src2) || a.dst == b.src2);
      out->dependencies[i].push_back({static_cast<uint32_t>(j), aligned});
    }
  }
  out->forwardedBy.assign(steps.size(), -1);
  for (size_t i = 0; i < steps.size(); ++i)
    if (steps[i].kind == StepKind::RecvReduce) out->forwardedBy[i] = forwardingSend(named, *out, i);
}

CollectiveRun::CollectiveRun(const PreparedSchedule* plan, Connection* const* connections, RunBuffers buffers,
                             RunReduction reduction, const char* name, uint64_t sequence)
    : plan_(plan),
      connections_(connections),
      buffers_(buffers),
      reduction_(reduction),
      elementSize_(dataTypeSize(reduction.type)),
      name_(name),
      sequence_(sequence),
      slicesDone_(plan->schedule.steps.size(), 0) {
  for (const Step& step : plan_->schedule.steps) {
    if (step.peer < 0) continue;
    Connection* c = connections_[step.peer];
    if (std::find(peers_.begin(), peers_.end(), c) == peers_.end()) peers_.push_back(c);
  }
  done_ = plan_->schedule.steps.empty();
}

CollectiveRun::~CollectiveRun() {
  // A run that did not finish must not leave a connection reading into or sending from the
  // caller's buffers after the call returned.
  if (!done_)
    for (Connection* c : peers_) c->abandonInPlace();
}

char* CollectiveRun::address(const BufferRange& range) const {
  const char* base = nullptr;
  if (range.owner >= 0) {
    base = range.buffer == BufferKind::Send ? buffers_.peerSend[range.owner] : buffers_.peerRecv[range.owner];
  } else {
    switch (range.buffer) {
      case BufferKind::Send: base = buffers_.send; break;
      case BufferKind::Recv: base = buffers_.recv; break;
      case BufferKind::Scratch: base = buffers_.scratch; break;
    }
  }
  // Integer arithmetic: a null base with absolute offsets (send/recv groups) stays well defined.
  return reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(base) + range.offset);
}

bool CollectiveRun::dependenciesReady(size_t step, uint32_t slice, size_t ignored) const {
  for (const auto& d : plan_->dependencies[step]) {
    if (d.step == ignored) continue;
    uint32_t need = d.sliceAligned ? slice + 1 : plan_->sliceCounts[d.step];
    if (slicesDone_[d.step] < need) return false;
  }
  return true;
}

ncclResult_t CollectiveRun::advance(size_t i, bool* progressed) {
  const Step& step = plan_->schedule.steps[i];
  const uint32_t total = plan_->sliceCounts[i];
  const size_t sliceBytes = plan_->sliceBytes;
  uint32_t& k = slicesDone_[i];
  if (stepStamps_ && stepStamps_[2 * i] == 0 && k < total && dependenciesReady(i, k)) stepStamps_[2 * i] = cycleStamp();
  if (buffers_.device && step.kind != StepKind::Notify && step.kind != StepKind::WaitNotify) {
    if (k == total || !dependenciesReady(i, total - 1)) return ncclSuccess;
    WEFT_CHECK(runOnDevice(step));
    k = total;
    *progressed = true;
    return ncclSuccess;
  }
  while (k < total && dependenciesReady(i, k)) {
    if (isCodecStep(step.kind)) {
      bool waiting = false;
      WEFT_CHECK(advanceCodec(i, k, &waiting));
      if (waiting) return ncclSuccess;
      ++k;
      *progressed = true;
      // One slice per pass: the next step takes this slice while it is still in cache (a
      // codec pipeline makes several passes over each slice; the whole buffer would not fit).
      return ncclSuccess;
    }
    size_t offset = static_cast<size_t>(k) * sliceBytes;
    size_t rangeBytes = step.kind == StepKind::Recv ? step.dst.bytes : step.src.bytes;
    size_t bytes = std::min(sliceBytes, rangeBytes - offset);
    switch (step.kind) {
      case StepKind::Send: {
        Connection* c = connections_[step.peer];
        if (movesInPlace(c, bytes)) {
          bool sent = false;
          WEFT_CHECK(c->sendFrom(address(step.src) + offset, bytes, &sent));
          if (!sent) {
            noteWait(c);
            return ncclSuccess;
          }
          break;
        }
        void* slot = nullptr;
        WEFT_CHECK(reserveSend(c, bytes, &slot));
        if (!slot) return ncclSuccess;
        memcpy(slot, address(step.src) + offset, bytes);
        WEFT_CHECK(c->sendCommit(bytes));
        break;
      }
      case StepKind::Recv:
      case StepKind::RecvReduce: {
        Connection* c = connections_[step.peer];
        if (step.kind == StepKind::Recv && movesInPlace(c, bytes)) {
          size_t got = 0;
          bool received = false;
          WEFT_CHECK(c->recvInto(address(step.dst) + offset, bytes, &got, &received));
          if (received) break;
          if (got != 0 && got != bytes) return sizeMismatch(i, got, bytes);
          noteWait(c);
          return ncclSuccess;
        }
        const void* data = nullptr;
        WEFT_CHECK(nextMessage(c, bytes, i, &data));
        if (!data) return ncclSuccess;
        if (step.kind == StepKind::Recv && plan_->streamsReceives)
          streamingCopy(address(step.dst) + offset, data, bytes);  // the last write: keep it out of cache
        else if (step.kind == StepKind::Recv)
          memcpy(address(step.dst) + offset, data, bytes);
        else {
          bool forwarded = false;
          if (plan_->forwardedBy[i] >= 0) WEFT_CHECK(reduceAndForward(i, k, data, offset, bytes, &forwarded));
          if (!forwarded)
            reduceBuffers(address(step.dst) + offset, address(step.src) + offset, data, bytes / elementSize_,
                          reduction_.type, reduction_.op);
        }
        c->recvRelease();
        break;
      }
      case StepKind::Copy: {
        char* from = address(step.src);
        char* to = address(step.dst);
        if (from == to && !step.dst2.bytes) {  // in place: nothing to move
          k = total;
          *progressed = true;
          return ncclSuccess;
        }
        // A second destination takes the slice while it is still in cache from the first.
        for (char* destination : {to, step.dst2.bytes ? address(step.dst2) : nullptr}) {
          if (!destination || destination == from) continue;
          if (step.dst.bytes >= kStreamingRangeBytes)
            streamingCopy(destination + offset, from + offset, bytes);
          else
            memcpy(destination + offset, from + offset, bytes);
        }
        break;
      }
      case StepKind::Scale:
        scaleBuffer(address(step.dst) + offset, address(step.src) + offset, bytes / elementSize_, reduction_.type,
                    reduction_.scalar);
        break;
      case StepKind::Reduce:
        if (step.dst2.bytes)
          reduceToTwo(address(step.dst) + offset, address(step.dst2) + offset, address(step.src) + offset,
                      address(step.src2) + offset, bytes / elementSize_, reduction_.type, reduction_.op,
                      step.dst.bytes >= kStreamingRangeBytes);
        else
          reduceBuffers(address(step.dst) + offset, address(step.src) + offset, address(step.src2) + offset,
                        bytes / elementSize_, reduction_.type, reduction_.op);
        break;
      case StepKind::Notify: {
        Connection* c = connections_[step.peer];
        void* slot = nullptr;
        WEFT_CHECK(reserveSend(c, 0, &slot));
        if (!slot) return ncclSuccess;
        WEFT_CHECK(c->sendCommit(0));
        break;
      }
      case StepKind::WaitNotify: {
        Connection* c = connections_[step.peer];
        const void* data = nullptr;
        WEFT_CHECK(nextMessage(c, 0, i, &data));
        if (!data) return ncclSuccess;
        c->recvRelease();
        break;
      }
      case StepKind::Divide:
        divideBuffer(address(step.dst) + offset, address(step.src) + offset, bytes / elementSize_, reduction_.type,
                     plan_->schedule.divisor);
        break;
      case StepKind::ToFloat:
      case StepKind::FromFloat:
      case StepKind::EncodeSend:
      case StepKind::RecvDecodeAdd:
      case StepKind::RecvEncoded:
      case StepKind::SendEncoded:
      case StepKind::Decode:
      case StepKind::DecodeAdd: break;  // advanceCodec
    }
    ++k;
    *progressed = true;
  }
  return ncclSuccess;
}

// The whole of a local step of a run on device memory (RunBuffers::device), as kernels.
ncclResult_t CollectiveRun::runOnDevice(const Step& step) {
  const DeviceWork& device = *buffers_.device;
  char* to = address(step.dst);
  const char* from = address(step.src);
  const size_t count = step.src.bytes / elementSize_;
  if (count == 0) return ncclSuccess;  // an empty chunk (fewer elements than ranks)
  switch (step.kind) {
    case StepKind::Copy:
      if (to != from) WEFT_CHECK(device.api->copyAsync(to, from, step.src.bytes, device.stream));
      if (step.dst2.bytes) WEFT_CHECK(device.api->copyAsync(address(step.dst2), from, step.src.bytes, device.stream));
      break;
    case StepKind::Reduce:
      WEFT_CHECK(
          device.api->reduceAsync(to, from, address(step.src2), count, reduction_.type, reduction_.op, device.stream));
      if (step.dst2.bytes) WEFT_CHECK(device.api->copyAsync(address(step.dst2), to, step.src.bytes, device.stream));
      break;
    case StepKind::Divide:
      WEFT_CHECK(device.api->divideAsync(to, from, count, reduction_.type, plan_->schedule.divisor, device.stream));
      break;
    default:
      return fail(ncclInternalError, "%s: a %s step cannot run on device memory", name_, stepKindName(step.kind));
  }
  // Waited for here, before the steps after it (a Notify tells peers the data is written): the
  // progress thread has nothing else to do for this communicator meanwhile.
  return device.api->synchronizeStream(device.stream);
}

ncclResult_t CollectiveRun::advanceCodec(size_t i, uint32_t k, bool* waiting) {
  const Step& step = plan_->schedule.steps[i];
  if (!reduction_.codec.codec && step.kind != StepKind::ToFloat && step.kind != StepKind::FromFloat)
    return fail(ncclInternalError, "%s #%llu: step %zu (%s) needs a codec and the run has none", name_,
                static_cast<unsigned long long>(sequence_), i, stepKindName(step.kind));
  if (isEncodedOnly(step.kind)) return moveEncoded(i, k, waiting);
  const CodecSlice slice = codecSlice(step, k);
  switch (step.kind) {
    case StepKind::ToFloat: toFloat(step, slice); return ncclSuccess;
    case StepKind::FromFloat: fromFloat(step, slice); return ncclSuccess;
    case StepKind::EncodeSend: return encodeSend(i, slice, waiting);
    case StepKind::RecvDecodeAdd: return recvDecodeAdd(i, slice, waiting);
    case StepKind::Decode: {
      float* out = floatAt(step.dst, slice);
      reduction_.codec.codec->decodeRange(slice.stored, 0, slice.n, slice.n, out, false, 1.0f);
      return ncclSuccess;
    }
    case StepKind::DecodeAdd: decodeAdd(step, slice, slice.stored); return ncclSuccess;
    default: break;
  }
  return fail(ncclInternalError, "%s: step %zu: %s is not a codec step", name_, i, stepKindName(step.kind));
}

CollectiveRun::CodecSlice CollectiveRun::codecSlice(const Step& step, uint32_t k) const {
  const Schedule& schedule = plan_->schedule;
  CodecSlice slice;
  slice.first = static_cast<size_t>(k) * schedule.codecSliceElements;
  const size_t floats = codecFloatRange(step).bytes / sizeof(float);
  slice.n = std::min(schedule.codecSliceElements, floats - slice.first);
  // The accumulator is Scratch at 0, so a float's offset there is its index in the call.
  slice.element = codecFloatRange(step).offset / sizeof(float) + slice.first;
  slice.residual = reduction_.codec.residual ? reduction_.codec.residual + slice.element : nullptr;
  slice.stored = encodedSlice(step, k);
  return slice;
}

char* CollectiveRun::encodedSlice(const Step& step, uint32_t k) const {
  const size_t stride = plan_->schedule.encodedSliceBytes;
  return step.src2.bytes ? address(step.src2) + static_cast<size_t>(k) * stride : nullptr;
}

float* CollectiveRun::floatAt(const BufferRange& range, const CodecSlice& slice) const {
  return reinterpret_cast<float*>(address(range)) + slice.first;
}

ncclResult_t CollectiveRun::moveEncoded(size_t i, uint32_t k, bool* waiting) {
  const Step& step = plan_->schedule.steps[i];
  const size_t stride = plan_->schedule.encodedSliceBytes;
  char* stored = encodedSlice(step, k);
  const size_t bytes = std::min(stride, step.src2.bytes - static_cast<size_t>(k) * stride);
  Connection* c = connections_[step.peer];
  if (step.kind == StepKind::SendEncoded) {
    void* slot = nullptr;
    WEFT_CHECK(reserveSend(c, bytes, &slot));
    *waiting = !slot;
    if (!slot) return ncclSuccess;
    memcpy(slot, stored, bytes);
    return c->sendCommit(bytes);
  }
  const void* data = nullptr;
  WEFT_CHECK(nextMessage(c, bytes, i, &data));
  *waiting = !data;
  if (!data) return ncclSuccess;
  memcpy(stored, data, bytes);
  c->recvRelease();
  return ncclSuccess;
}

void CollectiveRun::toFloat(const Step& step, const CodecSlice& slice) {
  const char* in = address(step.src) + slice.first * elementSize_;
  float* out = floatAt(step.dst, slice);
  // The residual is cleared, or keeps the sum when the one EncodeSend of these elements will
  // take the encoding off it (Schedule::encodesToFloatOnce).
  const bool keep = plan_->schedule.encodesToFloatOnce;
  float* __restrict residual = slice.residual;
  if (reduction_.type == ncclFloat32 && residual) {  // one pass: the input plus the residual
    const float* __restrict x = reinterpret_cast<const float*>(in);
    float* __restrict sum = out;
    for (size_t j = 0; j < slice.n; ++j) {
      sum[j] = x[j] + residual[j];
      residual[j] = keep ? sum[j] : 0.0f;
    }
    return;
  }
  if (reduction_.type == ncclFloat32)
    memcpy(out, in, slice.n * sizeof(float));
  else
    compression::halfToFloatArray(reinterpret_cast<const uint16_t*>(in), slice.n, out, reduction_.type == ncclBfloat16);
  if (residual)
    for (size_t j = 0; j < slice.n; ++j) {
      out[j] += residual[j];
      residual[j] = keep ? out[j] : 0.0f;
    }
}

void CollectiveRun::fromFloat(const Step& step, const CodecSlice& slice) {
  const float* in = floatAt(step.src, slice);
  char* out = address(step.dst) + slice.first * elementSize_;
  const float divisor = static_cast<float>(plan_->schedule.divisor);
  float tile[1024];
  for (size_t j = 0; j < slice.n; j += 1024) {
    size_t m = std::min<size_t>(1024, slice.n - j);
    const float* from = in + j;
    if (divisor != 1.0f) {
      for (size_t e = 0; e < m; ++e) tile[e] = from[e] / divisor;
      from = tile;
    }
    if (reduction_.type == ncclFloat32)
      memcpy(out + j * sizeof(float), from, m * sizeof(float));
    else
      compression::floatToHalfArray(from, m, reinterpret_cast<uint16_t*>(out) + j, reduction_.type == ncclBfloat16);
  }
}

ncclResult_t CollectiveRun::encodeSend(size_t i, const CodecSlice& slice, bool* waiting) {
  const Step& step = plan_->schedule.steps[i];
  compression::Codec* codec = reduction_.codec.codec;
  const size_t n = slice.n;
  Connection* c = connections_[step.peer];
  const size_t bytes = codec->encodedBytes(n);
  void* slot = nullptr;
  WEFT_CHECK(reserveSend(c, bytes, &slot));
  *waiting = !slot;
  if (!slot) return ncclSuccess;
  const float* x = floatAt(step.src, slice);
  const compression::EncodeContext context{reduction_.codec.seed, slice.element};
  codec->encodeRange(x, 0, n, n, slot, context);
  if (slice.residual) {  // residual += x - decode(encode(x)); x is there already when ToFloat left it
    if (!plan_->schedule.encodesToFloatOnce)
      for (size_t j = 0; j < n; ++j) slice.residual[j] += x[j];
    codec->decodeRange(slot, 0, n, n, slice.residual, true, -1.0f);
  }
  if (step.dst.bytes) codec->decodeRange(slot, 0, n, n, floatAt(step.dst, slice), false, 1.0f);
  if (slice.stored) memcpy(slice.stored, slot, bytes);
  return c->sendCommit(bytes);
}

ncclResult_t CollectiveRun::recvDecodeAdd(size_t i, const CodecSlice& slice, bool* waiting) {
  const Step& step = plan_->schedule.steps[i];
  Connection* c = connections_[step.peer];
  const size_t bytes = reduction_.codec.codec->encodedBytes(slice.n);
  const void* data = nullptr;
  WEFT_CHECK(nextMessage(c, bytes, i, &data));
  *waiting = !data;
  if (!data) return ncclSuccess;
  decodeAdd(step, slice, data);
  if (slice.stored) memcpy(slice.stored, data, bytes);
  c->recvRelease();
  return ncclSuccess;
}

void CollectiveRun::decodeAdd(const Step& step, const CodecSlice& slice, const void* encoded) {
  float* out = floatAt(step.dst, slice);
  const float* in = floatAt(step.src, slice);
  if (out != in) memcpy(out, in, slice.n * sizeof(float));
  reduction_.codec.codec->decodeRange(encoded, 0, slice.n, slice.n, out, true, 1.0f);
}

ncclResult_t CollectiveRun::reserveSend(Connection* c, size_t bytes, void** slot, bool noteFull) {
  if (c->sendBuffer(bytes, slot) != ncclSuccess) {  // the schedule was sliced for another transport
    const std::string reason = lastErrorMessage();
    return fail(ncclInternalError, "%s #%llu: %s", name_, static_cast<unsigned long long>(sequence_), reason.c_str());
  }
  if (!*slot && noteFull) noteWait(c);
  return ncclSuccess;
}

ncclResult_t CollectiveRun::reduceAndForward(size_t i, uint32_t k, const void* data, size_t offset, size_t bytes,
                                             bool* forwarded) {
  *forwarded = false;
  const size_t j = static_cast<size_t>(plan_->forwardedBy[i]);
  // Slices that found no room earlier went into the destination: the Send takes those first.
  bool sentEarlier = false;
  if (slicesDone_[j] < k) WEFT_CHECK(advance(j, &sentEarlier));
  // The Send takes its slices in order, and only once everything it waits for (but this
  // reduction) is done: the earlier messages on its channel above all.
  if (slicesDone_[j] != k || !dependenciesReady(j, k, i)) return ncclSuccess;
  Connection* out = connections_[plan_->schedule.steps[j].peer];
  if (movesInPlace(out, bytes)) return ncclSuccess;  // the Send sends from the destination itself
  void* slot = nullptr;
  WEFT_CHECK(reserveSend(out, bytes, &slot, /*noteFull=*/false));
  if (!slot) return ncclSuccess;  // no room yet: reduce into the destination; the Send reads it later
  const Step& step = plan_->schedule.steps[i];
  // One pass writes the result to both places, before the slot is committed (the peer reads it
  // from then on). Not into the slot first and copied from there: the slot's lines are the
  // peer's, held in its cache, and ordinary stores would fetch each one across the cores first
  // (on this project's VM, with its vCPUs far apart, that halved the rate); reduceToTwo's memcpy
  // or streaming stores write whole lines without reading them.
  reduceToTwo(address(step.dst) + offset, slot, address(step.src) + offset, data, bytes / elementSize_, reduction_.type,
              reduction_.op, plan_->streamsReceives);
  WEFT_CHECK(out->sendCommit(bytes));
  if (stepStamps_ && stepStamps_[2 * j] == 0) stepStamps_[2 * j] = cycleStamp();
  ++slicesDone_[j];
  *forwarded = true;
  return ncclSuccess;
}

ncclResult_t CollectiveRun::nextMessage(Connection* c, size_t expected, size_t step, const void** data) {
  size_t got = 0;
  *data = nullptr;
  WEFT_CHECK(c->recvPeek(data, &got));
  if (!*data) {
    noteWait(c);
    return ncclSuccess;
  }
  if (got != expected) {
    *data = nullptr;
    return sizeMismatch(step, got, expected);
  }
  return ncclSuccess;
}

ncclResult_t CollectiveRun::sizeMismatch(size_t step, size_t got, size_t expected) const {
  const Step& s = plan_->schedule.steps[step];
  return fail(ncclInvalidUsage,
              "%s #%llu: rank %d sent %zu bytes where %zu were expected at step %zu (%s): the ranks disagree on the "
              "count, datatype, collective or compression",
              name_, static_cast<unsigned long long>(sequence_), s.peer, got, expected, step, stepKindName(s.kind));
}

void CollectiveRun::noteWait(Connection* c) {
  if (std::find(waitingOn_.begin(), waitingOn_.end(), c) == waitingOn_.end()) waitingOn_.push_back(c);
}

ncclResult_t CollectiveRun::progress(bool* progressed) {
  if (done_) return ncclSuccess;
  waitingOn_.clear();
  for (Connection* c : peers_)
    if (c->hasPendingSends()) WEFT_CHECK(c->progress());
  const auto& steps = plan_->schedule.steps;
  bool allDone = true;
  for (size_t i = firstIncomplete_; i < steps.size(); ++i) {
    if (slicesDone_[i] < plan_->sliceCounts[i]) WEFT_CHECK(advance(i, progressed));
    if (stepStamps_ && slicesDone_[i] >= plan_->sliceCounts[i] && stepStamps_[2 * i + 1] == 0) {
      stepStamps_[2 * i + 1] = cycleStamp();
      if (stepStamps_[2 * i] == 0) stepStamps_[2 * i] = stepStamps_[2 * i + 1];  // nothing to do (no slices)
    }
    if (slicesDone_[i] < plan_->sliceCounts[i]) {
      allDone = false;
    } else if (allDone) {
      firstIncomplete_ = i + 1;
    }
  }
  if (allDone) {
    bool flushed = true;
    for (Connection* c : peers_)
      if (c->hasPendingSends()) {
        flushed = false;
        noteWait(c);
      }
    done_ = flushed;
  }
  return ncclSuccess;
}

std::string CollectiveRun::describeWait() const {
  const WaitPoint wait = waitPoint();
  const std::string call = std::string(name_) + " #" + std::to_string(sequence_);
  if (wait.slices == 0) return call + " flushing sends";
  const Step& s = plan_->schedule.steps[wait.step];
  std::string text = call + " step " + std::to_string(wait.step) + " (" + wait.stepKind;
  if (s.peer >= 0) text += (sendsToPeer(s) ? " to rank " : " from rank ") + std::to_string(s.peer);
  return text + "), slice " + std::to_string(wait.slice) + "/" + std::to_string(wait.slices);
}

WaitPoint CollectiveRun::waitPoint() const {
  WaitPoint wait;
  wait.sequence = sequence_;
  wait.stepKind = "flush";  // every step done, sends still queued (slices stays 0)
  const auto& steps = plan_->schedule.steps;
  for (size_t i = firstIncomplete_; i < steps.size(); ++i) {
    if (slicesDone_[i] >= plan_->sliceCounts[i]) continue;
    wait.step = static_cast<uint32_t>(i);
    wait.stepKind = stepKindName(steps[i].kind);
    wait.peer = steps[i].peer;
    wait.slice = slicesDone_[i];
    wait.slices = plan_->sliceCounts[i];
    return wait;
  }
  return wait;
}

}  // namespace weft
