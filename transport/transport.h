// The transport interface: what the executor needs from any way of moving bytes between
// two ranks. A Connection joins this rank to one peer, in both directions; messages are
// delivered whole and in order. Transports never know which collective they carry.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl.h"

namespace weft {

class Connection {
 public:
  virtual ~Connection() = default;

  virtual const char* transportName() const = 0;
  // Largest message sendBuffer() accepts.
  virtual size_t maxMessageBytes() const = 0;

  // A buffer to fill with the next message of `bytes`, or nullptr while the peer has no
  // room; then sendCommit() publishes it. Zero-copy: the caller writes (or reduces) straight
  // into transport memory.
  virtual void* sendBuffer(size_t bytes) = 0;
  virtual ncclResult_t sendCommit(size_t bytes) = 0;

  // The next whole message (*data == nullptr while none has arrived); recvRelease() hands its
  // memory back once the caller has consumed it.
  virtual ncclResult_t recvPeek(const void** data, size_t* bytes) = 0;
  virtual void recvRelease() = 0;

  // Moves bytes that need the CPU (sockets); cheap when there is nothing to do.
  virtual ncclResult_t progress() = 0;
  // Called before the rank sleeps: an error if the peer died or aborted.
  virtual ncclResult_t checkPeer() = 0;
  // A file descriptor to poll() for activity while sleeping, or -1 (then the transport wakes
  // this rank through the shared-memory doorbell).
  virtual int pollFd() const { return -1; }
  // True when sends are still queued locally (the rank must keep calling progress()).
  virtual bool hasPendingSends() const { return false; }
};

}  // namespace weft
