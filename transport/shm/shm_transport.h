// Shared-memory transport between ranks on one host (processes or threads). Each rank owns
// a segment with one receive ring per local peer; a sender copies (or reduces) straight into
// the receiver's ring slot, the receiver consumes from it. Waiting ranks sleep on a futex
// doorbell that the other side rings only when the sleeper asked for it.
#pragma once

#include <memory>
#include <vector>

#include "transport/shm/shm_segment.h"
#include "transport/transport.h"

namespace weft {

struct ShmPeerAddress {
  int pid;
  int fd;
  int localRank;
};

class ShmTransport {
 public:
  // Geometry from WEFT_SHM_SLOT_BYTES (default 512 KiB) and WEFT_SHM_SLOTS (default 8).
  static ShmLayout layoutFromEnv(int localSize);

  ncclResult_t init(int localRank, int localSize);
  ShmPeerAddress address() const;
  // The doorbell this rank sleeps on.
  ShmSegmentHeader* ownHeader() const { return own_.header(); }
  ncclResult_t connect(const ShmPeerAddress& peer, std::unique_ptr<Connection>* out);
  // Marks this rank aborted so that peers waiting on it fail instead of hanging.
  void markAborted();

 private:
  ShmSegment own_;
  int localRank_ = -1;
};

}  // namespace weft
