#include "runtime/executor.h"

#include <algorithm>
#include <cstring>

#include "common/dtype.h"
#include "common/streaming_copy.h"
#include "common/status.h"

namespace weft {

namespace {

bool reads(const Step& step) { return step.kind != StepKind::Recv && !isFence(step.kind); }
bool writes(const Step& step) { return step.kind != StepKind::Send && !isFence(step.kind); }
bool usesPeer(const Step& step) { return step.peer >= 0; }
bool sendsToPeer(const Step& step) { return step.kind == StepKind::Send || step.kind == StepKind::Notify; }

// A received range this large will not be read back from cache: write it with streaming stores.
constexpr size_t kStreamingRangeBytes = 4 << 20;

BufferRange normalized(BufferRange range, bool sendAliasesRecv) {
  if (sendAliasesRecv && range.buffer == BufferKind::Send) range.buffer = BufferKind::Recv;
  return range;
}

}  // namespace

void prepareSchedule(Schedule schedule, bool sendAliasesRecv, size_t sliceBytes, PreparedSchedule* out) {
  out->schedule = std::move(schedule);
  out->sliceBytes = sliceBytes;
  const auto& steps = out->schedule.steps;
  out->dependencies.assign(steps.size(), {});
  out->sliceCounts.resize(steps.size());
  int lastFence = -1;
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    size_t bytes = s.kind == StepKind::Recv ? s.dst.bytes : s.src.bytes;
    out->sliceCounts[i] = isFence(s.kind) ? 1 : static_cast<uint32_t>((bytes + sliceBytes - 1) / sliceBytes);
    if (isFence(s.kind)) {
      // A fence waits for everything before it; everything after it waits for it.
      for (size_t j = 0; j < i; ++j) out->dependencies[i].push_back({static_cast<uint32_t>(j), false});
      lastFence = static_cast<int>(i);
      continue;
    }
    if (lastFence >= 0) out->dependencies[i].push_back({static_cast<uint32_t>(lastFence), false});
    BufferRange src = normalized(s.src, sendAliasesRecv);
    BufferRange src2 = normalized(s.src2, sendAliasesRecv);
    BufferRange dst = normalized(s.dst, sendAliasesRecv);
    bool channelSeen = false;
    for (size_t j = i; j-- > static_cast<size_t>(lastFence + 1);) {
      const Step& t = steps[j];
      BufferRange tSrc = normalized(t.src, sendAliasesRecv);
      BufferRange tSrc2 = normalized(t.src2, sendAliasesRecv);
      BufferRange tDst = normalized(t.dst, sendAliasesRecv);
      bool raw = reads(s) && writes(t) && (src.overlaps(tDst) || (s.kind == StepKind::Reduce && src2.overlaps(tDst)));
      bool waw = writes(s) && writes(t) && dst.overlaps(tDst);
      bool war = writes(s) && reads(t) && (dst.overlaps(tSrc) || (t.kind == StepKind::Reduce && dst.overlaps(tSrc2)));
      // Messages on one channel (peer, direction) must leave and arrive in schedule order. Only
      // a step that moves a message counts: an empty one is done at once, whatever came before.
      bool channel = !channelSeen && usesPeer(s) && t.peer == s.peer && sendsToPeer(s) == sendsToPeer(t) &&
                     out->sliceCounts[j] > 0;
      if (channel) channelSeen = true;
      if (!(raw || waw || war || channel)) continue;
      bool aligned = !channel;
      if (raw) aligned &= src == tDst && (s.kind != StepKind::Reduce || !src2.overlaps(tDst) || src2 == tDst);
      if (waw) aligned &= dst == tDst;
      if (war) aligned &= dst == tSrc && (t.kind != StepKind::Reduce || !dst.overlaps(tSrc2) || dst == tSrc2);
      out->dependencies[i].push_back({static_cast<uint32_t>(j), aligned});
    }
  }
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

bool CollectiveRun::dependenciesReady(size_t step, uint32_t slice) const {
  for (const auto& d : plan_->dependencies[step]) {
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
  while (k < total && dependenciesReady(i, k)) {
    size_t offset = static_cast<size_t>(k) * sliceBytes;
    size_t rangeBytes = step.kind == StepKind::Recv ? step.dst.bytes : step.src.bytes;
    size_t bytes = std::min(sliceBytes, rangeBytes - offset);
    switch (step.kind) {
      case StepKind::Send: {
        Connection* c = connections_[step.peer];
        void* slot = c->sendBuffer(bytes);
        if (!slot) {
          noteWait(c);
          return ncclSuccess;
        }
        memcpy(slot, address(step.src) + offset, bytes);
        WEFT_CHECK(c->sendCommit(bytes));
        break;
      }
      case StepKind::Recv:
      case StepKind::RecvReduce: {
        Connection* c = connections_[step.peer];
        const void* data = nullptr;
        size_t got = 0;
        WEFT_CHECK(c->recvPeek(&data, &got));
        if (!data) {
          noteWait(c);
          return ncclSuccess;
        }
        if (got != bytes)
          return fail(ncclInvalidUsage,
                      "%s #%llu: rank %d sent %zu bytes where %zu were expected at step %zu: the ranks disagree on "
                      "the count, datatype or collective",
                      name_, static_cast<unsigned long long>(sequence_), step.peer, got, bytes, i);
        if (step.kind == StepKind::Recv && step.dst.bytes >= kStreamingRangeBytes)
          streamingCopy(address(step.dst) + offset, data, bytes);  // the last write: keep it out of cache
        else if (step.kind == StepKind::Recv)
          memcpy(address(step.dst) + offset, data, bytes);
        else
          reduceBuffers(address(step.dst) + offset, address(step.src) + offset, data, bytes / elementSize_,
                        reduction_.type, reduction_.op);
        c->recvRelease();
        break;
      }
      case StepKind::Copy: {
        char* from = address(step.src);
        char* to = address(step.dst);
        if (from == to) {  // in place: nothing to move
          k = total;
          *progressed = true;
          return ncclSuccess;
        }
        if (step.dst.bytes >= kStreamingRangeBytes)
          streamingCopy(to + offset, from + offset, bytes);
        else
          memcpy(to + offset, from + offset, bytes);
        break;
      }
      case StepKind::Scale:
        scaleBuffer(address(step.dst) + offset, address(step.src) + offset, bytes / elementSize_, reduction_.type,
                    reduction_.scalar);
        break;
      case StepKind::Reduce:
        reduceBuffers(address(step.dst) + offset, address(step.src) + offset, address(step.src2) + offset,
                      bytes / elementSize_, reduction_.type, reduction_.op);
        break;
      case StepKind::Notify: {
        Connection* c = connections_[step.peer];
        if (!c->sendBuffer(0)) {
          noteWait(c);
          return ncclSuccess;
        }
        WEFT_CHECK(c->sendCommit(0));
        break;
      }
      case StepKind::WaitNotify: {
        Connection* c = connections_[step.peer];
        const void* data = nullptr;
        size_t got = 0;
        WEFT_CHECK(c->recvPeek(&data, &got));
        if (!data) {
          noteWait(c);
          return ncclSuccess;
        }
        if (got != 0)
          return fail(ncclInvalidUsage, "%s #%llu: rank %d sent %zu bytes where a barrier was expected at step %zu",
                      name_, static_cast<unsigned long long>(sequence_), step.peer, got, i);
        c->recvRelease();
        break;
      }
      case StepKind::Divide:
        divideBuffer(address(step.dst) + offset, address(step.src) + offset, bytes / elementSize_, reduction_.type,
                     plan_->schedule.divisor);
        break;
    }
    ++k;
    *progressed = true;
  }
  return ncclSuccess;
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
  const auto& steps = plan_->schedule.steps;
  for (size_t i = firstIncomplete_; i < steps.size(); ++i) {
    if (slicesDone_[i] >= plan_->sliceCounts[i]) continue;
    const Step& s = steps[i];
    std::string text = std::string(name_) + " #" + std::to_string(sequence_) + " step " + std::to_string(i) + " (" +
                       stepKindName(s.kind);
    if (s.peer >= 0) text += (s.kind == StepKind::Send ? " to rank " : " from rank ") + std::to_string(s.peer);
    text += "), slice " + std::to_string(slicesDone_[i]) + "/" + std::to_string(plan_->sliceCounts[i]);
    return text;
  }
  return std::string(name_) + " #" + std::to_string(sequence_) + " flushing sends";
}

}  // namespace weft
