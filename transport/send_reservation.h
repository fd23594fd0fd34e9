// The bookkeeping behind Connection::sendBuffer()/sendCommit() that every slot-based
// transport shares: a message never exceeds the slot, and a commit publishes at most what
// was reserved, and only after a reservation.
#pragma once

#include <cstddef>

#include "common/status.h"
#include "nccl.h"

namespace weft {

class SendReservation {
 public:
  // Records a reservation of `bytes`; ncclInvalidUsage when it exceeds `maxBytes`.
  ncclResult_t reserve(size_t bytes, size_t maxBytes, const char* transport) {
    if (bytes > maxBytes)
      return fail(ncclInvalidUsage, "%s: a message of %zu bytes exceeds the maximum of %zu bytes", transport, bytes,
                  maxBytes);
    bytes_ = bytes;
    held_ = true;
    return ncclSuccess;
  }
  // The reservation could not be granted (no room): nothing to commit.
  void clear() { held_ = false; }
  // Consumes the reservation; ncclInvalidUsage without one or beyond its size.
  ncclResult_t commit(size_t bytes, const char* transport) {
    if (!held_) return fail(ncclInvalidUsage, "%s: sendCommit without a granted sendBuffer", transport);
    if (bytes > bytes_)
      return fail(ncclInvalidUsage, "%s: sendCommit of %zu bytes after reserving %zu", transport, bytes, bytes_);
    held_ = false;
    return ncclSuccess;
  }

 private:
  size_t bytes_ = 0;
  bool held_ = false;
};

}  // namespace weft
