// How the TCP fuzz targets read a data connection, the way the executor does: peek and
// release, and every other message in place (recvInto) into a buffer larger than a slot, as
// large slices are taken, followed by guard bytes no message may touch. Traps on anything a
// connection must never do with a peer's bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "transport/transport.h"

namespace weft::fuzz {

class ConnectionReader {
 public:
  // A message of exactly this size may land in the in-place buffer, no other.
  static constexpr size_t kInPlaceBytes = 4096 + 512;

  enum class Outcome { Took, Nothing, Failed };
  // One attempt at the next message. Failed: the connection refused what it read (the
  // expected end of a malformed input).
  Outcome takeNext(Connection* connection) {
    const void* message = nullptr;
    size_t bytes = 0;
    if (taken_ % 2 == 1) {
      bool done = false;
      if (connection->recvInto(target_.data(), kInPlaceBytes, &bytes, &done) != ncclSuccess) return Outcome::Failed;
      for (size_t i = kInPlaceBytes; i < target_.size(); ++i)
        if (target_[i] != kGuard) __builtin_trap();
      if (done) {
        if (bytes != kInPlaceBytes) __builtin_trap();
        ++taken_;
        return Outcome::Took;
      }
      // Another size (the executor reports the disagreement) waits whole in the ring.
      if (bytes != 0 && (connection->recvPeek(&message, &bytes) != ncclSuccess || !message)) __builtin_trap();
    } else if (connection->recvPeek(&message, &bytes) != ncclSuccess) {
      return Outcome::Failed;
    }
    if (!message) {
      (void)connection->checkPeerCarriesOn();  // quotes a failure frame's text, if one came
      return Outcome::Nothing;
    }
    if (bytes > connection->maxMessageBytes()) __builtin_trap();
    volatile uint8_t last = bytes ? static_cast<const uint8_t*>(message)[bytes - 1] : 0;
    (void)last;
    connection->recvRelease();
    ++taken_;
    return Outcome::Took;
  }

 private:
  static constexpr uint8_t kGuard = 0xa5;
  std::vector<uint8_t> target_ = std::vector<uint8_t>(kInPlaceBytes + 64, kGuard);
  uint64_t taken_ = 0;
};

}  // namespace weft::fuzz
