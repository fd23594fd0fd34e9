// The executor: the one engine that runs schedules for real. It splits every step into
// slices, lets a slice go as soon as the slice it depends on is done (so a ring forwards a
// slice while the next one is still arriving), posts slices to the transports (straight from
// and into the call's buffers where a transport can: Connection::sendFrom, recvInto), reduces
// straight out of receive slots, and turns any transport failure into an error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/schedule.h"
#include "common/reduce.h"
#include "nccl.h"
#include "runtime/device/device_api.h"
#include "runtime/exec/collective_progress.h"
#include "runtime/exec/collective_record.h"
#include "transport/transport.h"

namespace weft::compression {
class Codec;
}

namespace weft {

// A schedule with its hazards worked out once, reusable for every call with the same shape.
struct PreparedSchedule {
  struct Dependency {
    uint32_t step;
    bool sliceAligned;  // same bytes: slice k waits for the dependency's slice k only
  };
  Schedule schedule;
  std::vector<std::vector<Dependency>> dependencies;  // per step
  std::vector<uint32_t> sliceCounts;                  // per step
  size_t sliceBytes = 0;
  // The Recv steps together write kStreamingRangeBytes or more: what they receive (and what a
  // forwarded RecvReduce writes, below) will not be read back from cache, so it is written with
  // streaming stores (a piece's steps are small, the call is not).
  bool streamsReceives = false;
  // Per step: for a RecvReduce whose result a later Send forwards as it is, slice for slice (the
  // ring's next step), that Send's index; -1 otherwise. Where the Send may go, each slice is
  // reduced once into both the destination and the Send's slot, instead of being written to
  // the destination and read back (NCCL's recvReduceCopySend).
  std::vector<int32_t> forwardedBy;
  std::vector<PeerTraffic> traffic;  // bytes to and from each peer (for the collective record)
  const char* algorithm = "?";       // static text, set by whoever made the schedule
  // The runtime's own exchange before a call (the direct path's descriptors): its run is not
  // counted as the call in the statistics.
  bool bookkeeping = false;
  // Bytes the call sent to peers other than by its steps (direct sends' device copies, before
  // the run): counted with its traffic in the record and the statistics.
  uint64_t bytesSentOutsideSteps = 0;
};

// `sendAliasesRecv`: the call is in place, so the Send and Recv buffers are the same memory.
void prepareSchedule(Schedule schedule, bool sendAliasesRecv, size_t sliceBytes, PreparedSchedule* out);

struct RunBuffers {
  const char* send = nullptr;
  char* recv = nullptr;
  char* scratch = nullptr;
  // Peers' buffers mapped into this process, indexed by rank (direct schedules only).
  char* const* peerSend = nullptr;
  char* const* peerRecv = nullptr;
  // Non-null: every buffer is device memory, and the local steps (Copy, Reduce, Divide) run on
  // the device, each queued whole and waited for before the steps after it; the schedule may
  // move nothing else (only Notify and WaitNotify besides).
  const DeviceWork* device = nullptr;
};

// What codec steps (compressed schedules) use: the codec, sized for the schedule's slices, and
// the error-feedback residual (one float per element of the call; null: no error feedback):
// ToFloat adds it to the input and clears it, every EncodeSend adds what its encoding dropped.
struct RunCodec {
  compression::Codec* codec = nullptr;
  float* residual = nullptr;
  uint64_t seed = 0;  // stochastic rounding / top-k sampling
};

struct RunReduction {
  ncclDataType_t type = ncclFloat32;
  ReduceOp op = ReduceOp::Sum;
  alignas(8) uint8_t scalar[8] = {};  // PreMulSum: one value of `type` for Scale steps, owned by the run
  RunCodec codec;                     // codec steps only
};

class CollectiveRun {
 public:
  // `connections` is indexed by peer rank; every peer the schedule names must be connected.
  CollectiveRun(const PreparedSchedule* plan, Connection* const* connections, RunBuffers buffers,
                RunReduction reduction, const char* name, uint64_t sequence);
  ~CollectiveRun();
  CollectiveRun(const CollectiveRun&) = delete;
  CollectiveRun& operator=(const CollectiveRun&) = delete;

  // Does everything that can be done now without waiting; *progressed says whether anything
  // moved. Returns an error when a transport failed or a peer broke the protocol.
  ncclResult_t progress(bool* progressed);
  bool done() const { return done_; }
  uint64_t sequence() const { return sequence_; }

  // The connections this run talks through (for sleeping on their file descriptors).
  const std::vector<Connection*>& connections() const { return peers_; }
  // The connections the last progress() found it had to wait for (no message yet, or no room):
  // only these peers' health matters; a peer that finished its part and left is no failure.
  const std::vector<Connection*>& waitingOn() const { return waitingOn_; }
  // "allreduce #12 step 3 (recvReduce from rank 2), slice 4/16": what the run is waiting for.
  std::string describeWait() const;
  // The same, as fields, for the live status (collective_progress.h); sinceNs is left 0.
  WaitPoint waitPoint() const;

  // WEFT_TRACE: `stamps` (two per step, zeroed: when its first slice could start and when its
  // last one was done, cycleStamp()) is filled as the run progresses. Null (the default): no
  // step is timed.
  void timeSteps(uint64_t* stamps) { stepStamps_ = stamps; }
  const uint64_t* stepStamps() const { return stepStamps_; }
  const PreparedSchedule& plan() const { return *plan_; }

 private:
  // Whether `slice` of `step` may run: its dependencies' slices are done (`ignored`'s aside).
  bool dependenciesReady(size_t step, uint32_t slice, size_t ignored = SIZE_MAX) const;
  // Slice k of RecvReduce step i, whose message is `data`, reduced in one pass into i's
  // destination and a send slot of the step that forwards it (PreparedSchedule::forwardedBy);
  // *forwarded is false (nothing reduced) when that Send cannot take slice k now.
  ncclResult_t reduceAndForward(size_t i, uint32_t k, const void* data, size_t offset, size_t bytes, bool* forwarded);
  ncclResult_t advance(size_t step, bool* progressed);
  ncclResult_t runOnDevice(const Step& step);
  // One slice of a codec step; *waiting when a peer has no message or no room yet.
  ncclResult_t advanceCodec(size_t step, uint32_t slice, bool* waiting);
  // Where slice k of a float codec step lies: elements [first, first + n) of the step's float
  // range, `element` the first one's index in the call (the residual's and seed's index), and
  // the slice's kept encoding (src2; null when the step keeps none).
  struct CodecSlice {
    size_t first = 0;
    size_t n = 0;
    size_t element = 0;
    float* residual = nullptr;  // at `element`; null without error feedback
    char* stored = nullptr;
  };
  CodecSlice codecSlice(const Step& step, uint32_t k) const;
  char* encodedSlice(const Step& step, uint32_t k) const;
  float* floatAt(const BufferRange& range, const CodecSlice& slice) const;
  // SendEncoded / RecvEncoded: an already encoded slice, bytes as they are.
  ncclResult_t moveEncoded(size_t step, uint32_t k, bool* waiting);
  // The call's elements to floats (adding and clearing the residual), and back (divided).
  void toFloat(const Step& step, const CodecSlice& slice);
  void fromFloat(const Step& step, const CodecSlice& slice);
  // Encodes and sends (the residual gains what the encoding dropped).
  ncclResult_t encodeSend(size_t step, const CodecSlice& slice, bool* waiting);
  ncclResult_t recvDecodeAdd(size_t step, const CodecSlice& slice, bool* waiting);
  // dst = src + decode(encoded).
  void decodeAdd(const Step& step, const CodecSlice& slice, const void* encoded);
  void noteWait(Connection* c);
  // A send slot of `bytes` on `c` in *slot, or nullptr (the wait noted) while the peer has no
  // room; ncclInternalError when the message exceeds what the connection carries.
  // `noteFull`: a full connection counts as a wait (not when the caller has another way on).
  ncclResult_t reserveSend(Connection* c, size_t bytes, void** slot, bool noteFull = true);
  // The next message on `c` (*data null, the wait noted, while none has arrived); a message of
  // another size than `expected` is the ranks disagreeing, reported naming the peer and step.
  ncclResult_t nextMessage(Connection* c, size_t expected, size_t step, const void** data);
  // The error of a message of `got` bytes from step's peer where `expected` were due.
  ncclResult_t sizeMismatch(size_t step, size_t got, size_t expected) const;
  char* address(const BufferRange& range) const;

  const PreparedSchedule* plan_;
  Connection* const* connections_;
  RunBuffers buffers_;
  RunReduction reduction_;
  size_t elementSize_;
  const char* name_;
  uint64_t sequence_;
  std::vector<uint32_t> slicesDone_;
  std::vector<Connection*> peers_;
  std::vector<Connection*> waitingOn_;
  size_t firstIncomplete_ = 0;
  bool done_ = false;
  uint64_t* stepStamps_ = nullptr;
};

}  // namespace weft
