// One collective or point-to-point call as the runtime sees it after argument checks, and the
// function that runs a batch of them (a single call, or everything queued in a group).
#pragma once

#include <cstddef>
#include <vector>

#include "compression/types.h"
#include "nccl.h"

namespace weft {

enum class CollectiveKind { AllReduce, Broadcast, Reduce, AllGather, ReduceScatter, AllToAll, Gather, Scatter, Send, Recv };

struct CollectiveCall {
  CollectiveKind kind = CollectiveKind::AllReduce;
  ncclComm* comm = nullptr;
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  size_t count = 0;  // NCCL's count argument for this kind (per rank for all-gather, recvcount for reduce-scatter)
  ncclDataType_t datatype = ncclFloat32;
  ncclRedOp_t op = ncclSum;
  int root = -1;  // broadcast, reduce, gather, scatter
  int peer = -1;  // send, recv
  // weftAllReduceCompressed: the codec, its seed, and the caller's error-feedback residual
  // (count floats, or null). Calls without it may still be compressed by WEFT_COMPRESSION.
  bool compressed = false;
  compression::CodecConfig codec{};
  uint64_t codecSeed = 0;
  float* residual = nullptr;
};

// A call with the fields every kind has; root and peer where the kind takes them.
inline CollectiveCall makeCall(CollectiveKind kind, ncclComm* comm, const void* sendbuff, void* recvbuff, size_t count,
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

const char* collectiveName(CollectiveKind kind);
inline bool isPointToPoint(CollectiveKind kind) { return kind == CollectiveKind::Send || kind == CollectiveKind::Recv; }

// Runs the calls; calls on one communicator run in order (its sends and receives fused into
// one schedule, so they may be posted in any order), calls on different communicators progress
// together (so one thread can drive every rank of ncclCommInitAll).
ncclResult_t runCollectives(const std::vector<CollectiveCall>& calls);

}  // namespace weft
