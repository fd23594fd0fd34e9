// What a TCP connection (one socket, or striped over several) knows of its own health: the
// first error, which every later use returns again, and whether an in-place message abandoned
// halfway left the byte stream out of step (then the connection is closed and fails from then on).
#pragma once

#include <string>

#include "common/status.h"
#include "nccl.h"

namespace weft {

class TcpConnectionHealth {
 public:
  explicit TcpConnectionHealth(int peerRank) : peerRank_(peerRank) {}

  // ncclSuccess while usable; else the first error, or the out-of-step one, with its message
  // as this thread's last error (a helper thread may have found it: striped_tcp_connection.h).
  ncclResult_t usable() {
    if (outOfStep_ && failed_ == ncclSuccess)
      keep(fail(ncclRemoteError,
                "tcp: the connection to rank %d was closed: an earlier collective ended in the middle of a message",
                peerRank_));
    if (failed_ != ncclSuccess) restoreLastError(message_);
    return failed_;
  }
  // Keeps `error` (just reported with fail() on this thread) as the connection's state.
  ncclResult_t keep(ncclResult_t error) {
    failed_ = error;
    message_ = lastErrorMessage();
    return error;
  }
  ncclResult_t closedByPeer() { return keep(fail(ncclRemoteError, "tcp: rank %d closed the connection", peerRank_)); }
  // Reported by the next use: the caller's own error stands now.
  void markOutOfStep() { outOfStep_ = true; }
  // Whether frames still go through in step (usable() without reporting anything).
  bool inStep() const { return failed_ == ncclSuccess && !outOfStep_; }

 private:
  int peerRank_;
  ncclResult_t failed_ = ncclSuccess;
  std::string message_;
  bool outOfStep_ = false;
};

}  // namespace weft
