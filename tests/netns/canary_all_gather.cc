// A rank of tests/netns/encryption.sh: all-gathers 4 MiB per rank of one known ASCII pattern
// over weftCommInitFromEnv's communicator and checks what arrived. Whether the pattern then
// shows in the traffic captured between the hosts says whether the traffic was encrypted.
#include <cstdio>
#include <cstring>
#include <vector>

#include "nccl.h"
#include "weft/weft.h"

int main() {
  static const char kCanary[] = "WEFT-CANARY-PLAINTEXT-0123456789";  // 32 bytes and a NUL
  constexpr size_t kBytes = 4 << 20;
  ncclComm_t comm = nullptr;
  if (weftCommInitFromEnv(&comm) != ncclSuccess) {
    fprintf(stderr, "init: %s\n", ncclGetLastError(nullptr));
    return 1;
  }
  int nranks = 0;
  ncclCommCount(comm, &nranks);
  std::vector<char> mine(kBytes), all(kBytes * nranks);
  for (size_t i = 0; i < kBytes; ++i) mine[i] = kCanary[i % 32];
  for (int round = 0; round < 3; ++round) {
    if (ncclAllGather(mine.data(), all.data(), kBytes, ncclChar, comm, nullptr) != ncclSuccess) {
      fprintf(stderr, "all-gather: %s\n", ncclGetLastError(comm));
      return 2;
    }
    for (size_t i = 0; i < all.size(); ++i)
      if (all[i] != kCanary[i % 32]) {
        fprintf(stderr, "all-gather: byte %zu is wrong\n", i);
        return 3;
      }
  }
  ncclCommDestroy(comm);
  printf("canary all-gather: %d ranks, 3 rounds, every byte right\n", nranks);
  return 0;
}
