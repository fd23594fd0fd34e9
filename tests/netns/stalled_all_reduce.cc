// A rank of tests/netns/status_across_hosts.sh: three all-reduces over weftCommInitFromEnv's
// communicator, then rank STALL_RANK sleeps STALL_SECONDS before the fourth, which the others
// are already waiting in; every result is checked. With TIMEOUT_RANK and TIMEOUT_SECONDS, that
// rank alone waits at most that long (weftCommSetTimeout), so that it alone times out.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "nccl.h"
#include "weft/weft.h"

int main() {
  const char* stallRank = std::getenv("STALL_RANK");
  const char* stallSeconds = std::getenv("STALL_SECONDS");
  ncclComm_t comm = nullptr;
  if (weftCommInitFromEnv(&comm) != ncclSuccess) {
    std::fprintf(stderr, "init: %s\n", ncclGetLastError(nullptr));
    return 1;
  }
  int rank = 0, nranks = 0;
  ncclCommUserRank(comm, &rank);
  ncclCommCount(comm, &nranks);
  const char* timeoutRank = std::getenv("TIMEOUT_RANK");
  if (timeoutRank && std::atoi(timeoutRank) == rank &&
      weftCommSetTimeout(comm, std::atof(std::getenv("TIMEOUT_SECONDS") ? std::getenv("TIMEOUT_SECONDS") : "1")) !=
          ncclSuccess) {
    std::fprintf(stderr, "weftCommSetTimeout: %s\n", ncclGetLastError(comm));
    return 4;
  }
  std::vector<float> data(4096, 1.0f);
  float expected = 1.0f;
  for (int k = 0; k < 4; ++k) {
    if (k == 3 && stallRank && std::atoi(stallRank) == rank) {
      std::printf("rank %d: sleeping %s s before all-reduce #%d\n", rank, stallSeconds ? stallSeconds : "0", k);
      std::fflush(stdout);
      usleep(static_cast<useconds_t>(std::atof(stallSeconds ? stallSeconds : "0") * 1e6));
    }
    if (ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess) {
      std::fprintf(stderr, "all-reduce #%d: %s\n", k, ncclGetLastError(comm));
      return 2;
    }
    expected *= static_cast<float>(nranks);
    for (float v : data)
      if (v != expected) {
        std::fprintf(stderr, "all-reduce #%d: %g where %g was expected\n", k, v, expected);
        return 3;
      }
  }
  ncclCommDestroy(comm);
  std::printf("rank %d: 4 all-reduces right\n", rank);
  return 0;
}
