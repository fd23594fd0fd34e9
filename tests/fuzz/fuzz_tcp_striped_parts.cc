// What a peer sends on a striped TCP connection (transport/tcp/striped_tcp_connection.h): the
// input is two byte streams, one per socket (a 16-bit length of the first, then both), fed
// through socketpairs while the connection reads them as the executor would
// (tests/fuzz/connection_reader.h).
// Parts with a wrong magic, past their message, of a message larger than a slot, disagreeing
// with their message's other parts or of a message already delivered must be refused, never
// written past a slot or the caller's buffer.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tests/fuzz/connection_reader.h"
#include "transport/tcp/striped_tcp_connection.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2 || size > 1 << 16) return 0;
  uint16_t firstBytes = 0;
  memcpy(&firstBytes, data, sizeof firstBytes);
  data += 2;
  size -= 2;
  const size_t split = std::min<size_t>(firstBytes, size);
  const uint8_t* streams[2] = {data, data + split};
  const size_t lengths[2] = {split, size - split};

  int near[2], far[2];
  for (int i = 0; i < 2; ++i) {
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) != 0) {
      for (int j = 0; j < i; ++j) close(near[j]), close(far[j]);
      return 0;
    }
    near[i] = pair[0];
    far[i] = pair[1];
  }
  // 4 KiB slots, 2 of them: a message of 4097 bytes, a part numbered past the ring and a full
  // ring are all reachable.
  std::unique_ptr<weft::Connection> connection;
  if (weft::makeStripedTcpConnection({near[0], near[1]}, 1, weft::RingGeometry{4096, 2}, 1, &connection) !=
      ncclSuccess) {
    close(far[0]), close(far[1]);
    return 0;
  }
  weft::fuzz::ConnectionReader reader;
  size_t written[2] = {0, 0};
  bool open[2] = {true, true};
  for (int round = 0; round < 10000; ++round) {
    for (int i = 0; i < 2; ++i) {
      if (written[i] < lengths[i]) {
        ssize_t n = write(far[i], streams[i] + written[i], lengths[i] - written[i]);
        if (n > 0) written[i] += static_cast<size_t>(n);
      } else if (open[i]) {
        close(far[i]);
        open[i] = false;
      }
    }
    const auto outcome = reader.takeNext(connection.get());
    if (outcome == weft::fuzz::ConnectionReader::Outcome::Failed) break;
    // Everything was sent and nothing more makes a message whole.
    if (outcome == weft::fuzz::ConnectionReader::Outcome::Nothing && !open[0] && !open[1] && round > 100) break;
  }
  for (int i = 0; i < 2; ++i)
    if (open[i]) close(far[i]);
  return 0;
}
