// What the RDMA protocol (rdma_connection.h) needs from a reliable-connected queue pair, and
// nothing about verbs: the verbs transport implements it over ibv_post_send/ibv_post_recv/
// ibv_poll_cq (ibverbs_queue_pair.h); the protocol's CPU tests implement it in memory. The
// contract is RC's: writes arrive whole and in order, each write with immediate consumes one
// posted receive at the peer and completes there in order, and a signaled write completes
// here only after the peer's adapter has acknowledged it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl.h"

namespace weft {

struct RdmaCompletion {
  enum Kind { WriteDone, Arrived } kind;
  uint64_t id;         // WriteDone: postWrite's id; Arrived: postReceive's id
  uint32_t immediate;  // Arrived: the immediate the peer sent
  bool ok;
  const char* error;  // when !ok: what the adapter reported (a static string)
};

class RdmaQueue {
 public:
  virtual ~RdmaQueue() = default;
  // An RDMA write with immediate of `bytes` from `local` (inside this side's registered send
  // region; null when bytes is 0) to `remoteOffset` in the peer's registered receive region,
  // signaled: poll() reports WriteDone with `id`.
  virtual ncclResult_t postWrite(uint64_t id, const void* local, size_t bytes, uint64_t remoteOffset,
                                 uint32_t immediate) = 0;
  // A receive that one incoming write with immediate consumes.
  virtual ncclResult_t postReceive(uint64_t id) = 0;
  // Up to `capacity` completions, oldest first; *count how many.
  virtual ncclResult_t poll(RdmaCompletion* out, int capacity, int* count) = 0;
  // For sleeping: an fd that becomes readable on a new completion once armed, or -1.
  virtual int eventFd() const { return -1; }
  // Arms eventFd(); false when completions may already be waiting (poll instead of sleeping).
  virtual bool armEvents() { return true; }
};

}  // namespace weft
