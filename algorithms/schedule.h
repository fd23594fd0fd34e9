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
  Copy,        // dst [and dst2] = src
  Divide,      // dst = src / divisor (the final step of an average)
  Scale,       // dst = src * the call's scalar (ncclRedOpCreatePreMulSum: inputs are scaled first)
  Reduce,      // dst [and dst2] = src op src2 (any range may be a peer's buffer)
  Notify,      // tell peer: everything before this step is done (an empty message)
  WaitNotify,  // wait for peer's Notify; nothing after this step starts before it
  // Compressed data (algorithms/builders/compressed_allreduce.h). These steps are cut into slices of
  // Schedule::codecSliceElements elements of their float32 range; each slice is encoded as one
  // codec chunk, so its encoded size is encodedBytes(elements of the slice). The encoded range
  // (`src2` of these steps, "encoded" below) holds slice k's bytes at offset + k *
  // Schedule::encodedSliceBytes. Float ranges are the float32 accumulator at Scratch offset 0,
  // element i at byte 4i: a float range's offset / 4 is its element index in the call (error
  // feedback and rounding seeds are per element).
  ToFloat,        // dst (float32) = src (the call's type) [+ the run's residual, which is cleared]
  FromFloat,      // dst (the call's type) = src (float32) / divisor
  EncodeSend,     // send encode(src) to peer [dst = decode of what was sent] [bytes kept in encoded]
  RecvDecodeAdd,  // dst = src + decode(message from peer) [bytes kept in encoded]
  RecvEncoded,    // encoded = message from peer, as is
  SendEncoded,    // send the bytes kept in encoded to peer, as they are
  Decode,         // dst = decode(encoded)
  DecodeAdd,      // dst = src + decode(encoded)
};

struct Step {
  // A constructor rather than an aggregate so that builders can leave out the trailing ranges
  // ({kind, peer, src, dst, src2}) without -Wmissing-field-initializers.
  Step(StepKind kind = StepKind::Copy, int peer = -1, BufferRange src = {}, BufferRange dst = {}, BufferRange src2 = {},
       BufferRange dst2 = {})
      : kind(kind), peer(peer), src(src), dst(dst), src2(src2), dst2(dst2) {}

  StepKind kind = StepKind::Copy;
  int peer = -1;
  BufferRange src;
  BufferRange dst;
  BufferRange src2;  // Reduce: the second source; codec steps: the encoded range (see above)
  // Reduce and Copy only, empty otherwise: a second destination that gets the same result in
  // the same pass (the direct all-reduce writes each result into its own and the peer's receive
  // buffer; the direct all-gather its block).
  BufferRange dst2;
};

// Notify and WaitNotify order whole steps rather than bytes.
inline bool isFence(StepKind kind) { return kind == StepKind::Notify || kind == StepKind::WaitNotify; }

// Hazard checks (the executor's dependencies, the simulator's checks). A step
// reads its src (and a Reduce its src2) unless it is a Recv or a fence, and writes its dst (and
// a Reduce or Copy its dst2) unless it is a Send or a fence. Codec steps' encoded ranges are apart.
inline bool readsSources(const Step& step) { return step.kind != StepKind::Recv && !isFence(step.kind); }
inline bool writesDestinations(const Step& step) { return step.kind != StepKind::Send && !isFence(step.kind); }
// `reader` reads what `writer` writes (read after write, or write after read the other way), by
// the ranges' names (BufferRange::overlaps; the simulator renames ranges by address to check
// aliasing the names hide).
inline bool readsWhatWrites(const Step& reader, const Step& writer) {
  auto readsFrom = [&](const BufferRange& written) {
    return reader.src.overlaps(written) || (reader.kind == StepKind::Reduce && reader.src2.overlaps(written));
  };
  return readsSources(reader) && writesDestinations(writer) && (readsFrom(writer.dst) || readsFrom(writer.dst2));
}
// Both steps write the same bytes.
inline bool writesWhatWrites(const Step& a, const Step& b) {
  auto writesTo = [&](const BufferRange& written) { return a.dst.overlaps(written) || a.dst2.overlaps(written); };
  return writesDestinations(a) && writesDestinations(b) && (writesTo(b.dst) || writesTo(b.dst2));
}
// The compressed-data kinds, sliced by elements rather than bytes.
inline bool isCodecStep(StepKind kind) { return kind >= StepKind::ToFloat && kind <= StepKind::DecodeAdd; }
// Codec steps whose slices are counted on the encoded range (they have no float range).
inline bool isEncodedOnly(StepKind kind) { return kind == StepKind::RecvEncoded || kind == StepKind::SendEncoded; }
// The float32 range a codec step is sliced on.
inline const BufferRange& codecFloatRange(const Step& s) {
  return s.kind == StepKind::FromFloat || s.kind == StepKind::EncodeSend ? s.src : s.dst;
}

struct Schedule {
  std::vector<Step> steps;
  size_t scratchBytes = 0;
  uint64_t divisor = 1;  // for Divide steps
  // Compressed schedules: elements per slice of codec steps (every step of such a schedule is
  // sliced at codecSliceElements * 4 bytes) and the encoded size of a full slice.
  size_t codecSliceElements = 0;
  size_t encodedSliceBytes = 0;
  // Every element is encoded once, straight from what ToFloat made of it (the all-gather
  // algorithm): error feedback then needs no pass of its own. ToFloat leaves that value in the
  // residual, and EncodeSend takes off only what the encoding kept (for top-k, k elements).
  bool encodesToFloatOnce = false;

  // Which buffers the steps read and write; same-buffer in-place calls make Send alias Recv.
  std::string toString() const;
};

const char* stepKindName(StepKind kind);
// Moves a step's ranges to where its part sits in a larger schedule (channels side by side,
// pieces one after another): Send and Recv ranges (a peer's included) by userShift bytes,
// Scratch ranges by scratchShift. Empty ranges stay as they are.
void shiftRanges(Step* step, size_t userShift, size_t scratchShift);
// Whether the step sends to its peer (else, with a peer, it receives from it).
bool sendsToPeer(const Step& step);

// The ring order a builder uses: `order`, or 0, 1, ..., nranks-1 when it is empty.
std::vector<int> orderOrIdentity(const std::vector<int>& order, int nranks);

}  // namespace weft
