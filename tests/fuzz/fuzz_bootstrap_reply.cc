// What a rank reads from the bootstrap root (challenge, reply header, rank table), fed over a
// socketpair: whatever a squatter on the root's port could send.
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "runtime/comm/bootstrap.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > 1 << 16) return 0;
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) return 0;
  // The whole input is queued, then the root's end is closed: the rank reads until EOF.
  int bufferBytes = 1 << 20;
  setsockopt(fds[1], SOL_SOCKET, SO_SNDBUF, &bufferBytes, sizeof(bufferBytes));
  const int nranks = 1 + data[0] % 4;
  (void)!write(fds[1], data + 1, size - 1);
  close(fds[1]);
  weft::UniqueIdContents id;
  std::memset(id.secret.bytes, 0x5a, sizeof(id.secret.bytes));
  weft::RankInfo mine{};
  weft::BootstrapResult result;
  (void)weft::exchangeRankInfo(fds[0], id, nranks, mine, 0.2, &result);
  close(fds[0]);
  return 0;
}
