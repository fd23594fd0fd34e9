// One collective or point-to-point call as the runtime sees it after argument checks, and the
// function that runs a batch of them (a single call, or everything queued in a group).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithms/algorithm.h"
#include "compression/types.h"
#include "nccl.h"
#include "runtime/device/device_api.h"

namespace weft {

// The two sides of a point-to-point transfer (ncclSend, ncclRecv).
enum class PointToPoint : int { Send, Recv };

// What a call does: one of the collectives (algorithms/algorithm.h's Collective, the one list
// of them), or one side of a point-to-point transfer. Converts implicitly from either, so
// `call.kind == Collective::AllReduce` and `makeCall(PointToPoint::Send, ...)` read naturally.
class CallKind {
 public:
  constexpr CallKind(Collective collective) : collective_(collective) {}
  constexpr CallKind(PointToPoint side) : collective_(Collective::Count), send_(side == PointToPoint::Send) {}

  constexpr bool isPointToPoint() const { return collective_ == Collective::Count; }
  constexpr bool isSend() const { return isPointToPoint() && send_; }
  // The collective; Collective::Count for a send or receive.
  constexpr Collective collective() const { return collective_; }
  constexpr bool operator==(const CallKind&) const = default;

 private:
  Collective collective_;
  bool send_ = false;  // point-to-point only
};

// A call on device buffers that the stream path left in place (runtime/device): the direct
// path may read and write them from the peers' kernels. Its buffers as peers map them (or, where
// they cannot be exported, through the communicator's own device buffers), and the places in
// the batch's staging area where the progress thread copies them when the ranks cannot all be
// read directly (then the run is on host memory, and copied back after it).
struct DeviceBuffers {
  DeviceBufferExport send;
  DeviceBufferExport recv;
  bool throughOwnBuffers = false;  // send and recv are not exported: copied through own buffers
  char* stagingSend = nullptr;
  char* stagingRecv = nullptr;
  bool stagedAtRun = false;  // the run read and wrote the staging places
};

// A PreMulSum operator's scalar as the call saw it when it was made: NCCL lets the caller
// destroy the operator (and create another in its slot) as soon as the call returns, even
// inside a group, so a queued call keeps its own copy rather than the operator's handle.
struct PreMulSumScalar {
  bool present = false;
  alignas(8) uint8_t value[8] = {};  // ncclScalarHostImmediate: the value at creation
  const void* address = nullptr;     // ncclScalarDevice: read when the call runs
};

struct CollectiveCall {
  CallKind kind = Collective::AllReduce;
  ncclComm* comm = nullptr;
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  size_t count = 0;  // NCCL's count argument for this kind (per rank for all-gather, recvcount for reduce-scatter)
  ncclDataType_t datatype = ncclFloat32;
  ncclRedOp_t op = ncclSum;
  PreMulSumScalar preMulSum;  // op is a PreMulSum operator (op >= ncclNumOps)
  int root = -1;              // broadcast, reduce, gather, scatter
  int peer = -1;              // send, recv
  // The caller's stream. Host-memory calls complete before the call returns (or at the
  // outermost ncclGroupEnd); calls that touch device memory are ordered on it
  // (runtime/device/stream_dispatch.h).
  cudaStream_t stream = nullptr;
  // The caller's send buffer when the runtime stages device memory (runtime/device): state kept
  // per user buffer (WEFT_COMPRESSION's error feedback) is keyed by it. Null: sendbuff is it.
  const void* callerSendbuff = nullptr;
  // Set (by runtime/device) for a device call left unstaged for the direct path; owned by its
  // batch.
  DeviceBuffers* deviceBuffers = nullptr;
  // One slice of a call cut for pipelined staging, or one piece of a call cut to fit the own
  // device buffers (runtime/exec/staging_slices.h): a stream batch of its own.
  bool stagingSlice = false;
  // Such a piece cut to fit the own device buffers: it may go direct whatever its size, since the
  // whole call could (every rank agrees, however it stages the piece).
  bool ownBufferPiece = false;
  // Calls on this communicator in the ncclGroupEnd that made this one, a cut call's slices or
  // pieces counted (0: not counted, one). A rank whose calls are stream-ordered runs them in
  // several batches, so a batch of one call is not a lone call: only a lone call may take the
  // one-shot all-reduce, which every rank must agree on (runCollectives).
  size_t callsInGroup = 0;
  // Such a slice or piece of a collective with a block per rank, in its buffer of nranks blocks
  // (an all-gather's receive, a reduce-scatter's send, both of an all-to-all, the root's of a
  // gather or scatter): elements from one rank's block to the next, the whole call's count;
  // 0: count.
  size_t blockStride = 0;
  // weftAllReduceCompressed: the codec, its seed, and the caller's error-feedback residual
  // (count floats, or null). Calls without it may still be compressed by WEFT_COMPRESSION.
  bool compressed = false;
  compression::CodecConfig codec{};
  uint64_t codecSeed = 0;
  float* residual = nullptr;
};

// A call with the fields every kind has; root and peer where the kind takes them.
inline CollectiveCall makeCall(CallKind kind, ncclComm* comm, const void* sendbuff, void* recvbuff, size_t count,
                               ncclDataType_t datatype, ncclRedOp_t op = ncclSum, int root = -1, int peer = -1) {
  CollectiveCall call;
  call.kind = kind;
  call.comm = comm;
  call.sendbuff = sendbuff;
  call.recvbuff = recvbuff;
  call.count = count;
  call.datatype = datatype;
  call.op = op;
  call.root = root;
  call.peer = peer;
  return call;
}

// The bytes of each buffer that the call reads (send) or writes (recv) on this rank; 0 where
// NCCL ignores the buffer (a broadcast's sendbuff off the root, a reduce's recvbuff, ...).
struct BufferSpans {
  size_t send = 0;
  size_t recv = 0;
};
BufferSpans bufferSpans(const CollectiveCall& call);
// Bytes from one rank's block to the next in a buffer of nranks blocks (the block's size, unless
// the call is a strided slice or piece: CollectiveCall::blockStride).
size_t blockStrideBytes(const CollectiveCall& call);
// Whether two byte ranges share memory (an empty one shares none).
bool rangesOverlap(const void* a, size_t aBytes, const void* b, size_t bBytes);
// Whether the bytes the call reads and writes on this rank share memory (in place, or at an
// offset).
bool buffersOverlap(const CollectiveCall& call);

// Runs the calls; calls on one communicator run in order (its sends and receives fused into
// one schedule, so they may be posted in any order), calls on different communicators progress
// together (so one thread can drive every rank of ncclCommInitAll).
ncclResult_t runCollectives(const std::vector<CollectiveCall>& calls);

// Writes the dump that the status server asked for (`weft-info status --dump`, a peer whose call
// timed out, WEFT_DUMP_SIGNAL), if it did: the thread running the communicator's collectives
// calls this while it waits, as it alone may read the record.
void serveDumpRequest(ncclComm* comm);

}  // namespace weft
