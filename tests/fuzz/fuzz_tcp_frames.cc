// What a peer sends on a TCP data connection (transport/tcp/): the input is the byte stream,
// fed through a socketpair while the connection reads it as the executor would
// (tests/fuzz/connection_reader.h).
// Frames with a wrong magic or longer than a slot must be refused, never read past a slot; a
// failure frame (a peer's error, Connection::markFailed) is kept aside, never delivered.
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tests/fuzz/connection_reader.h"
#include "transport/tcp/tcp_transport.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 1 << 16) return 0;
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) return 0;
  // 4 KiB slots, 2 of them: a frame of 4097 bytes and a full ring are both reachable.
  std::unique_ptr<weft::Connection> connection = weft::makeTcpConnection(fds[0], 1, weft::TcpSettings{4096, 2});
  weft::fuzz::ConnectionReader reader;
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
    const auto outcome = reader.takeNext(connection.get());
    if (outcome == weft::fuzz::ConnectionReader::Outcome::Failed) break;
    // Everything was sent and nothing more can be read: the peer closed mid-frame.
    if (outcome == weft::fuzz::ConnectionReader::Outcome::Nothing && !writerOpen) break;
  }
  if (writerOpen) close(fds[1]);
  return 0;
}
