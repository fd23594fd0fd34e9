// What anyone who reaches the bootstrap root's port can send it: the input goes to a real root
// (one for the whole run, on loopback) over a fresh connection after its challenge, then the
// connection's write side closes. Garbage, partial hellos, a TLS upgrade followed by arbitrary
// handshake bytes (OpenSSL's parser and the root's lookup of the key a handshake names): each
// must be refused and closed, never crash the root or keep it.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "common/deadline.h"
#include "common/socket.h"
#include "runtime/comm/bootstrap.h"

namespace {

// The root, started once: it outlives the run (its WEFT_TIMEOUT is an hour).
const weft::SocketAddress* rootAddress() {
  static weft::SocketAddress bound;
  static bool started = [] {
    setenv("WEFT_TIMEOUT", "3600", 1);
    weft::SocketAddress loopback;
    weft::BootstrapSecret secret{};
    memset(secret.bytes, 0x5a, sizeof(secret.bytes));
    return weft::parseSocketAddress("127.0.0.1", "fuzz", &loopback) == ncclSuccess &&
           weft::startBootstrapRoot(loopback, secret, &bound) == ncclSuccess;
  }();
  return started ? &bound : nullptr;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const weft::SocketAddress* root = rootAddress();
  if (!root || size > 1 << 16) return 0;
  const weft::Deadline deadline = weft::Deadline::after(2);
  int fd = -1;
  if (weft::connectSocket(*root, deadline, &fd) != ncclSuccess) return 0;
  char challenge[32];  // the root's Challenge: magic, version, reserved, nonce
  if (weft::recvAll(fd, challenge, sizeof(challenge), deadline) == ncclSuccess) {
    (void)weft::sendAll(fd, data, size, deadline);
    shutdown(fd, SHUT_WR);
    // Until the root closes (it refuses everything here: nothing can prove the secret), so that
    // each input is handled before the next arrives.
    char sink[4096];
    for (pollfd p{fd, POLLIN, 0}; !deadline.expired() && poll(&p, 1, deadline.millisecondsLeft(100)) >= 0;)
      if ((p.revents & (POLLIN | POLLHUP)) && recv(fd, sink, sizeof(sink), MSG_DONTWAIT) == 0) break;
  }
  close(fd);
  return 0;
}
