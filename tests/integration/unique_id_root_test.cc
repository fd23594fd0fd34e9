// ncclGetUniqueId's bootstrap roots cost no thread or port each: ids that are never used share
// one serving thread and one listening port, and when their WEFT_TIMEOUT passes the thread ends
// and the port is released. Before, every id kept its own thread and port for WEFT_TIMEOUT and
// its thread stayed unjoined until exit.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <set>
#include <thread>

#include "common/socket.h"
#include "nccl.h"
#include "runtime/comm/bootstrap.h"
#include "runtime/comm/unique_id.h"
#include "tests/support/process_usage.h"

using namespace weft;
using weft::testing::threadsInThisProcess;

namespace {

bool accepting(const SocketAddress& address) {
  int fd = socket(address.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool connected = connect(fd, reinterpret_cast<const sockaddr*>(&address.storage), address.length) == 0;
  close(fd);
  return connected;
}

TEST(UniqueIdRoot, UnusedIdsShareOneThreadAndPortAndGoAwayAtTheDeadline) {
  setenv("WEFT_TIMEOUT", "1", 1);
  weft::testing::startThreadRuntime();
  const int threadsBefore = threadsInThisProcess();
  std::set<int> ports;
  SocketAddress root;
  for (int i = 0; i < 100; ++i) {
    ncclUniqueId id;
    ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess) << ncclGetLastError(nullptr);
    UniqueIdContents contents;
    ASSERT_EQ(decodeUniqueId(id, &contents), ncclSuccess);
    ports.insert(contents.root.port());
    root = contents.root;
  }
  const int threadsWith100 = threadsInThisProcess();
  std::printf("unique-id-roots ids=100 threads_before=%d threads_after=%d ports=%zu\n", threadsBefore, threadsWith100,
              ports.size());
  EXPECT_LE(threadsWith100 - threadsBefore, 1) << "a thread per id";
  EXPECT_EQ(ports.size(), 1u) << "a port per id";
  EXPECT_EQ(liveBootstrapRoots(), 100u);

  // WEFT_TIMEOUT=1: within a few seconds every root is gone, its thread joined, its port closed.
  auto start = std::chrono::steady_clock::now();
  while ((liveBootstrapRoots() > 0 || threadsInThisProcess() > threadsBefore) &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(5))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("unique-id-roots released_after_s=%.2f threads=%d\n", seconds, threadsInThisProcess());
  EXPECT_EQ(liveBootstrapRoots(), 0u);
  EXPECT_EQ(threadsInThisProcess(), threadsBefore) << "the serving thread outlived its last root";
  EXPECT_FALSE(accepting(root)) << "the port is still open after every root ended";

  // A new id afterwards starts a fresh thread and port, and still works.
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  unsetenv("WEFT_TIMEOUT");
}

}  // namespace
