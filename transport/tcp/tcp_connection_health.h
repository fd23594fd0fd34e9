// What a TCP connection (one socket, or striped over several) knows of its own health: the
// first error, which every later use returns again, and whether an in-place message abandoned
// halfway left the byte stream out of step (then the connection is closed and fails from then on).
#pragma once

#include "common/status.h"
#include "nccl.h"

namespace weft {

class TcpConnectionHealth {
 public:
  explicit TcpConnectionHealth(int peerRank) : peerRank_(peerRank) {}

  // ncclSuccess while usable; else the first error, or the out-of-step one.
  ncclResult_t usable() {
    if (outOfStep_ && failed_ == ncclSuccess)
      failed_ = fail(ncclRemoteError,
                     "tcp: the connection to rank %d was closed: an earlier collective ended in the middle of a "
                     "message",
                     peerRank_);
    return failed_;
  }
  // Keeps `error` (already reported with fail()) as the connection's state and returns it.
  ncclResult_t keep(ncclResult_t error) { return failed_ = error; }
  ncclResult_t closedByPeer() { return keep(fail(ncclRemoteError, "tcp: rank %d closed the connection", peerRank_)); }
  // Reported by the next use: the caller's own error stands now.
  void markOutOfStep() { outOfStep_ = true; }

 private:
  int peerRank_;
  ncclResult_t failed_ = ncclSuccess;
  bool outOfStep_ = false;
};

}  // namespace weft
