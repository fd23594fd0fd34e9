// A Schedule is one rank's part of a collective, as data: an ordered list of steps over byte
// ranges of the user's buffers and a scratch buffer. Builders are pure functions; the runtime
// executor runs schedules for real, the simulator runs every rank's schedule in one process,
// and the cost model prices them, all from the same data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace weft {

enum class BufferKind : uint8_t { Send, Recv, Scratch };

struct BufferRange {
  BufferKind buffer = BufferKind::Send;
  size_t offset = 0;  // bytes
  size_t bytes = 0;
  // -1: this rank's buffer; otherwise the rank whose buffer this is, read directly (same-host
  // peers whose buffers are shared, e.g. from ncclMemAlloc).
  int owner = -1;

  bool overlaps(const BufferRange& other) const {
    return buffer == other.buffer && owner == other.owner && bytes && other.bytes &&
           offset < other.offset + other.bytes && other.offset < offset + bytes;
  }
  bool operator==(const BufferRange&) const = default;
};

enum class StepKind : uint8_t {
  Send,        // src -> peer
  Recv,        // peer -> dst
  RecvReduce,  // dst = src op (message from peer)
  Copy,        // dst = src
  Divide,      // dst = src / divisor (the final step of an average)
  Scale,       // dst = src * the call's scalar (ncclRedOpCreatePreMulSum: inputs are scaled first)
  Reduce,      // dst = src op src2 (either source may be a peer's buffer)
  Notify,      // tell peer: everything before this step is done (an empty message)
  WaitNotify,  // wait for peer's Notify; nothing after this step starts before it
};

struct Step {
  StepKind kind = StepKind::Copy;
  int peer = -1;
  BufferRange src;
  BufferRange dst;
  BufferRange src2;  // Reduce only
};

// Notify and WaitNotify order whole steps rather than bytes.
inline bool isFence(StepKind kind) { return kind == StepKind::Notify || kind == StepKind::WaitNotify; }

struct Schedule {
  std::vector<Step> steps;
  size_t scratchBytes = 0;
  uint64_t divisor = 1;  // for Divide steps

  // Which buffers the steps read and write; same-buffer in-place calls make Send alias Recv.
  std::string toString() const;
};

const char* stepKindName(StepKind kind);

}  // namespace weft
