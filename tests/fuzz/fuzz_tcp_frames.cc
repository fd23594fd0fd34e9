// What a peer sends on a TCP data connection (transport/tcp/): the input is the byte stream,
// fed through a socketpair while the connection reads it as the executor would (peek, release;
// every other message in place, into a buffer larger than a slot, as large slices are taken).
// Frames with a wrong magic or longer than a slot must be refused, never read past a slot.
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "transport/tcp/tcp_transport.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 1 << 16) return 0;
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) return 0;
  // 4 KiB slots, 2 of them: a frame of 4097 bytes and a full ring are both reachable.
  std::unique_ptr<weft::Connection> connection = weft::makeTcpConnection(fds[0], 1, weft::TcpSettings{4096, 2});
  // Every other message is taken in place (recvInto), as the executor takes slices of 16 KiB and
  // more: into a buffer larger than a slot (a frame of exactly that size may land there, no
  // other), followed by guard bytes no frame may touch.
  constexpr size_t kInPlaceBytes = 4096 + 512;
  constexpr uint8_t kGuard = 0xa5;
  std::vector<uint8_t> target(kInPlaceBytes + 64, kGuard);
  uint64_t taken = 0;
  size_t written = 0;
  bool writerOpen = true;
  for (int round = 0; round < 10000; ++round) {
    if (written < size) {
      ssize_t n = write(fds[1], data + written, size - written);
      if (n > 0) written += static_cast<size_t>(n);
    } else if (writerOpen) {
      close(fds[1]);
      writerOpen = false;
    }
    const void* message = nullptr;
    size_t bytes = 0;
    if (taken % 2 == 1) {
      bool done = false;
      if (connection->recvInto(target.data(), kInPlaceBytes, &bytes, &done) != ncclSuccess) break;
      for (size_t i = kInPlaceBytes; i < target.size(); ++i)
        if (target[i] != kGuard) __builtin_trap();
      if (done) {
        if (bytes != kInPlaceBytes) __builtin_trap();
        ++taken;
        continue;
      }
      // Another size (the executor reports the disagreement) waits whole in the ring.
      if (bytes != 0 && (connection->recvPeek(&message, &bytes) != ncclSuccess || !message)) __builtin_trap();
    } else if (connection->recvPeek(&message, &bytes) != ncclSuccess) {
      break;
    }
    if (message) {
      if (bytes > connection->maxMessageBytes()) __builtin_trap();
      volatile uint8_t last = bytes ? static_cast<const uint8_t*>(message)[bytes - 1] : 0;
      (void)last;
      connection->recvRelease();
      ++taken;
    } else if (!writerOpen) {
      break;  // everything was sent and nothing more can be read: the peer closed mid-frame
    }
  }
  if (writerOpen) close(fds[1]);
  return 0;
}
