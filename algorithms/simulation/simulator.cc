#include "algorithms/simulation/simulator.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>

#include "common/dtype.h"

namespace weft {

namespace {

struct Message {
  std::vector<char> data;
  bool fence = false;
  double ready = 0.0;
};

size_t stepBytes(const Step& s) { return s.kind == StepKind::Recv ? s.dst.bytes : s.src.bytes; }
bool active(const Step& s) { return isFence(s.kind) || stepBytes(s) > 0; }

std::string describe(int rank, size_t index, const Step& s) {
  std::string text = "rank " + std::to_string(rank) + " step " + std::to_string(index) + " (" + stepKindName(s.kind);
  if (s.peer >= 0) text += (sendsToPeer(s) ? " to rank " : " from rank ") + std::to_string(s.peer);
  return text + ")";
}

struct Interval {
  uintptr_t begin = 0, end = 0;
  bool overlaps(const Interval& o) const { return begin < o.end && o.begin < end; }
};

class Simulation {
 public:
  Simulation(const std::vector<Schedule>& schedules, const std::vector<SimulatedBuffers>& buffers,
             const SimulationOptions& options)
      : schedules_(schedules),
        buffers_(buffers),
        options_(options),
        n_(static_cast<int>(schedules.size())),
        elementSize_(dataTypeSize(options.type)),
        next_(n_, 0),
        clock_(n_, 0.0),
        scratch_(n_) {}

  SimulationResult run() {
    if (static_cast<int>(buffers_.size()) != n_) return failed("one SimulatedBuffers per schedule is needed");
    if (elementSize_ == 0) return failed("invalid data type");
    for (int r = 0; r < n_; ++r) {
      if (!buffers_[r].scratch) {
        ownScratch_.emplace_back(schedules_[r].scratchBytes, char(0xA5));
        scratch_[r] = {ownScratch_.back().data(), ownScratch_.back().size()};
      } else {
        scratch_[r] = {buffers_[r].scratch, buffers_[r].scratchBytes};
      }
      if (scratch_[r].second < schedules_[r].scratchBytes)
        return failed("rank " + std::to_string(r) + " has less scratch than its schedule asks for");
      if (options_.checkHazards && !checkHazards(r)) return result_;
    }
    bool moved = true;
    while (moved) {
      moved = false;
      for (int r = 0; r < n_; ++r) {
        for (size_t ran = 0; next_[r] < schedules_[r].steps.size();) {
          bool blocked = false;
          if (!execute(r, schedules_[r].steps[next_[r]], &blocked)) return result_;
          if (blocked) break;
          ++next_[r];
          moved = true;
          if (options_.stepsPerTurn && ++ran >= options_.stepsPerTurn) break;
        }
      }
    }
    std::string stuck;
    int stuckRanks = 0;
    for (int r = 0; r < n_; ++r) {
      if (next_[r] == schedules_[r].steps.size()) continue;
      if (stuckRanks++ < 8) stuck += (stuck.empty() ? "" : "; ") + describe(r, next_[r], schedules_[r].steps[next_[r]]);
    }
    if (stuckRanks)
      return failed("deadlock: " + std::to_string(stuckRanks) + " rank(s) wait for messages that never come: " + stuck);
    for (const auto& [wire, queue] : queues_)
      if (!queue.empty())
        return failed(
            std::to_string(queue.size()) + " unconsumed message(s) from rank " + std::to_string(wire.first) +
            " to rank " + std::to_string(wire.second) + " (first: " +
            (queue.front().fence ? std::string("a notify") : std::to_string(queue.front().data.size()) + " bytes") +
            ")");
    result_.ok = true;
    result_.finishTime = clock_;
    result_.time = clock_.empty() ? 0.0 : *std::max_element(clock_.begin(), clock_.end());
    return result_;
  }

 private:
  SimulationResult failed(std::string error) {
    result_.ok = false;
    result_.error = std::move(error);
    return result_;
  }

  // The real address of a range, or null (and an error) when it falls outside its buffer.
  char* address(int rank, const BufferRange& range, size_t index) {
    const int owner = range.owner >= 0 ? range.owner : rank;
    if (owner >= n_) {
      failed(describe(rank, index, schedules_[rank].steps[index]) + " names rank " + std::to_string(owner));
      return nullptr;
    }
    char* base = nullptr;
    size_t size = 0;
    switch (range.buffer) {
      case BufferKind::Send: base = const_cast<char*>(buffers_[owner].send), size = buffers_[owner].sendBytes; break;
      case BufferKind::Recv: base = buffers_[owner].recv, size = buffers_[owner].recvBytes; break;
      case BufferKind::Scratch:
        if (range.owner >= 0) break;
        base = scratch_[rank].first, size = scratch_[rank].second;
        break;
    }
    if (!base || range.offset + range.bytes > size) {
      failed(describe(rank, index, schedules_[rank].steps[index]) + ": range [" + std::to_string(range.offset) + ", +" +
             std::to_string(range.bytes) + ") is outside its buffer of " + std::to_string(size) + " bytes");
      return nullptr;
    }
    return base + range.offset;
  }

  // A local step must read and write either the same bytes or disjoint ones.
  bool sameOrDisjoint(const char* a, const char* b, size_t bytes) { return a == b || a + bytes <= b || b + bytes <= a; }

  bool execute(int r, const Step& s, bool* blocked) {
    const size_t index = next_[r];
    const LinkModel* links = options_.links;
    if (!active(s)) return true;
    auto where = [&] { return describe(r, index, s); };
    const size_t bytes = stepBytes(s);
    if (!isFence(s.kind) && bytes % elementSize_ != 0 && s.kind != StepKind::Send && s.kind != StepKind::Recv &&
        s.kind != StepKind::Copy) {
      failed(where() + ": " + std::to_string(bytes) + " bytes is not a whole number of elements");
      return false;
    }
    const size_t elements = bytes / elementSize_;
    char* src = readsSources(s) ? address(r, s.src, index) : nullptr;
    char* dst = writesDestinations(s) ? address(r, s.dst, index) : nullptr;
    char* src2 = s.kind == StepKind::Reduce ? address(r, s.src2, index) : nullptr;
    char* dst2 = s.dst2.bytes ? address(r, s.dst2, index) : nullptr;
    if ((readsSources(s) && !src) || (writesDestinations(s) && !dst) || (s.kind == StepKind::Reduce && !src2) ||
        (s.dst2.bytes && !dst2))
      return false;
    if (s.dst2.bytes && s.kind != StepKind::Reduce && s.kind != StepKind::Copy) {
      failed(where() + ": only a reduce or a copy has a second destination");
      return false;
    }
    if (readsSources(s) && writesDestinations(s)) {
      if (s.dst.bytes != s.src.bytes || (s.kind == StepKind::Reduce && s.src2.bytes != s.src.bytes) ||
          (dst2 && s.dst2.bytes != s.src.bytes)) {
        failed(where() + ": source and destination sizes differ");
        return false;
      }
      bool partial = !sameOrDisjoint(src, dst, bytes) || (src2 && !sameOrDisjoint(src2, dst, bytes));
      if (dst2)
        partial |= !sameOrDisjoint(src, dst2, bytes) || !sameOrDisjoint(src2, dst2, bytes) ||
                   !sameOrDisjoint(dst, dst2, bytes) || dst == dst2;
      if (partial) {
        failed(where() + ": source and destination overlap partially");
        return false;
      }
    }
    if (s.peer >= n_ && s.peer >= 0) {
      failed(where() + ": no such rank");
      return false;
    }
    if (isCodecStep(s.kind)) {
      // Codec steps need a codec and run only in the executor; compressed schedules are checked
      // end to end (tests/integration/compressed_allreduce_test.cc).
      failed(where() + ": compressed steps cannot be simulated");
      return false;
    }
    switch (s.kind) {
      case StepKind::Send:
      case StepKind::Notify: {
        Message m;
        m.fence = s.kind == StepKind::Notify;
        if (!m.fence) m.data.assign(src, src + bytes);
        m.ready = links ? links->arrivalTime(r, s.peer, m.data.size(), clock_[r]) : clock_[r];
        queues_[{r, s.peer}].push_back(std::move(m));
        ++result_.messages;
        result_.bytesMoved += bytes;
        return true;
      }
      case StepKind::Recv:
      case StepKind::RecvReduce:
      case StepKind::WaitNotify: {
        auto& queue = queues_[{s.peer, r}];
        if (queue.empty()) {
          *blocked = true;
          return true;
        }
        Message m = std::move(queue.front());
        queue.pop_front();
        const bool wantFence = s.kind == StepKind::WaitNotify;
        if (m.fence != wantFence || (!wantFence && m.data.size() != bytes)) {
          failed(where() + ": got " + (m.fence ? std::string("a notify") : std::to_string(m.data.size()) + " bytes") +
                 ", expected " + (wantFence ? std::string("a notify") : std::to_string(bytes) + " bytes"));
          return false;
        }
        clock_[r] = std::max(clock_[r], m.ready);
        if (s.kind == StepKind::Recv) memcpy(dst, m.data.data(), bytes);
        if (s.kind == StepKind::RecvReduce)
          reduceBuffers(dst, src, m.data.data(), elements, options_.type, options_.op);
        if (s.kind != StepKind::WaitNotify && links) clock_[r] += links->localTime(r, s.kind, bytes);
        return true;
      }
      case StepKind::Copy:
        if (dst != src) memcpy(dst, src, bytes);
        if (dst2) memcpy(dst2, src, bytes);
        break;
      case StepKind::Scale:
        if (static_cast<size_t>(r) >= options_.scalars.size() || options_.scalars[r].size() != elementSize_) {
          failed(where() + ": no scalar for rank " + std::to_string(r));
          return false;
        }
        scaleBuffer(dst, src, elements, options_.type, options_.scalars[r].data());
        break;
      case StepKind::Divide: divideBuffer(dst, src, elements, options_.type, schedules_[r].divisor); break;
      case StepKind::Reduce:
        reduceBuffers(dst, src, src2, elements, options_.type, options_.op);
        if (dst2) memcpy(dst2, dst, bytes);
        break;
      default:  // codec steps, refused above
        failed(where() + ": unsupported step kind");
        return false;
    }
    if (links) clock_[r] += links->localTime(r, s.kind, bytes);
    return true;
  }

  // Where Send and Recv overlap in memory without being the same pointer, the executor cannot
  // see the aliasing: every real conflict between two steps must then be ordered some other way.
  bool checkHazards(int r) {
    const SimulatedBuffers& b = buffers_[r];
    Interval send{reinterpret_cast<uintptr_t>(b.send), reinterpret_cast<uintptr_t>(b.send) + b.sendBytes};
    Interval recv{reinterpret_cast<uintptr_t>(b.recv), reinterpret_cast<uintptr_t>(b.recv) + b.recvBytes};
    if (!b.send || !b.recv || b.send == b.recv || !send.overlaps(recv)) return true;
    const auto& steps = schedules_[r].steps;
    const size_t count = steps.size();
    const size_t words = (count + 63) / 64;
    std::vector<std::vector<uint64_t>> before(count, std::vector<uint64_t>(words, 0));  // happens-before sets
    auto addBefore = [&](size_t i, size_t j) {
      before[i][j / 64] |= uint64_t(1) << (j % 64);
      for (size_t w = 0; w < words; ++w) before[i][w] |= before[j][w];
    };
    // Each step again with its own buffers' ranges named by address (one address space, so the
    // named predicates compare addresses); peers' ranges cannot alias this rank's and drop out.
    // Built once per step: the pairs below are quadratic in the steps.
    std::vector<Step> byAddress(steps);
    int lastFence = -1;
    for (size_t i = 0; i < count; ++i) {
      const Step& s = steps[i];
      if (!active(s)) continue;
      Step& real = byAddress[i];
      for (BufferRange* range : {&real.src, &real.dst, &real.src2, &real.dst2}) {
        if (!range->bytes || range->owner >= 0) {
          range->bytes = 0;
          continue;
        }
        const char* at = address(r, *range, i);
        if (!at) return false;
        *range = {BufferKind::Send, reinterpret_cast<uintptr_t>(at), range->bytes, -1};
      }
      if (isFence(s.kind)) {
        for (size_t j = 0; j < i; ++j)
          if (active(steps[j])) addBefore(i, j);
        lastFence = static_cast<int>(i);
        continue;
      }
      if (lastFence >= 0) addBefore(i, lastFence);
      bool channelSeen = false;
      for (size_t j = i; j-- > static_cast<size_t>(lastFence + 1);) {
        const Step& t = steps[j];
        if (!active(t)) continue;
        bool named = readsWhatWrites(s, t) || writesWhatWrites(s, t) || readsWhatWrites(t, s);
        bool channel = !channelSeen && s.peer >= 0 && t.peer == s.peer && sendsToPeer(s) == sendsToPeer(t);
        channelSeen |= channel;
        if (named || channel) {
          addBefore(i, j);
          continue;
        }
        if (before[i][j / 64] >> (j % 64) & 1) continue;
        bool conflict = readsWhatWrites(real, byAddress[j]) || writesWhatWrites(real, byAddress[j]) ||
                        readsWhatWrites(byAddress[j], real);
        if (conflict) {
          failed("hidden aliasing: " + describe(r, i, s) + " and step " + std::to_string(j) + " (" +
                 stepKindName(t.kind) +
                 ") touch the same memory through differently named buffers, and the executor "
                 "would not order them");
          return false;
        }
      }
    }
    return true;
  }

  const std::vector<Schedule>& schedules_;
  const std::vector<SimulatedBuffers>& buffers_;
  const SimulationOptions& options_;
  const int n_;
  const size_t elementSize_;
  std::vector<size_t> next_;
  std::vector<double> clock_;
  std::vector<std::pair<char*, size_t>> scratch_;
  std::deque<std::vector<char>> ownScratch_;
  std::map<std::pair<int, int>, std::deque<Message>> queues_;
  SimulationResult result_;
};

}  // namespace

SimulationResult simulate(const std::vector<Schedule>& schedules, const std::vector<SimulatedBuffers>& buffers,
                          const SimulationOptions& options) {
  return Simulation(schedules, buffers, options).run();
}

}  // namespace weft
