// common/socket.h against loopback only: a connect() that gets no answer ends at its deadline
// (not after the kernel's ~130 s of SYN retries), and every connected socket has keepalive and
// TCP_USER_TIMEOUT set within WEFT_TIMEOUT; which connections stay inside the host.
#include "common/socket.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <vector>

#include "common/settings.h"
#include "common/status.h"

using namespace weft;

namespace {

using Clock = std::chrono::steady_clock;

// A loopback listener whose accept queue is full: with backlog 0 and nobody accepting, the
// kernel drops further SYNs, so a new connect() gets no answer at all, like a black-holed
// address, without sending anything beyond loopback.
struct BlackHole {
  int listener = -1;
  std::vector<int> fillers;
  SocketAddress address;

  bool open() {
    if (parseSocketAddress("127.0.0.1", "test", &address) != ncclSuccess) return false;
    listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (bind(listener, reinterpret_cast<const sockaddr*>(&address.storage), address.length) != 0) return false;
    if (listen(listener, 0) != 0) return false;
    address.length = sizeof(address.storage);
    getsockname(listener, reinterpret_cast<sockaddr*>(&address.storage), &address.length);
    for (int attempt = 0; attempt < 8; ++attempt) {  // until one connect stays unanswered
      int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
      fillers.push_back(s);
      connect(s, reinterpret_cast<const sockaddr*>(&address.storage), address.length);
      pollfd p{s, POLLOUT, 0};
      if (poll(&p, 1, 200) == 0) return true;
    }
    return false;
  }
  ~BlackHole() {
    for (int s : fillers) close(s);
    if (listener >= 0) close(listener);
  }
};

// Runs connectSocket in a child (a blocking connect cannot be interrupted from a thread) and
// returns how long it took in milliseconds, or -1 when it was still waiting after `limit`.
long connectMillisInChild(const SocketAddress& address, double deadlineSeconds, std::chrono::seconds limit) {
  int pipeFds[2];
  if (pipe(pipeFds) != 0) return -2;
  pid_t child = fork();
  if (child == 0) {
    close(pipeFds[0]);
    auto start = Clock::now();
    int fd = -1;
    ncclResult_t result = connectSocket(address, Deadline::after(deadlineSeconds), &fd);
    long millis = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    if (result == ncclSuccess) millis = -3;  // nobody should have answered
    _exit(write(pipeFds[1], &millis, sizeof(millis)) == sizeof(millis) ? 0 : 1);
  }
  close(pipeFds[1]);
  long millis = -1;
  pollfd p{pipeFds[0], POLLIN, 0};
  if (poll(&p, 1, static_cast<int>(limit.count() * 1000)) <= 0 || read(pipeFds[0], &millis, sizeof(millis)) <= 0)
    millis = -1;
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  close(pipeFds[0]);
  return millis;
}

TEST(ConnectSocket, UnansweredConnectEndsAtTheDeadline) {
  BlackHole hole;
  ASSERT_TRUE(hole.open()) << "could not fill the listener's accept queue";
  long millis = connectMillisInChild(hole.address, 1.0, std::chrono::seconds(15));
  ASSERT_NE(millis, -1) << "connect() still waiting 15 s after a 1 s deadline";
  ASSERT_NE(millis, -3) << "connected to a full listener";
  EXPECT_GE(millis, 900);
  EXPECT_LT(millis, 3000);
}

TEST(ConnectSocket, ConnectedSocketsHaveKeepAliveAndUserTimeout) {
  SocketAddress any;
  ASSERT_EQ(parseSocketAddress("127.0.0.1", "test", &any), ncclSuccess);
  int listener = -1, client = -1, server = -1;
  SocketAddress bound;
  ASSERT_EQ(listenSocket(any, &listener, &bound), ncclSuccess) << lastErrorMessage();
  ASSERT_EQ(connectSocket(bound, Deadline::after(10), &client), ncclSuccess) << lastErrorMessage();
  ASSERT_EQ(acceptSocket(listener, Deadline::after(10), &server, nullptr), ncclSuccess) << lastErrorMessage();
  for (int fd : {client, server}) {
    int value = 0;
    socklen_t length = sizeof(value);
    ASSERT_EQ(getsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &value, &length), 0);
    EXPECT_EQ(value, 1);
    ASSERT_EQ(getsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &value, &length), 0);
    EXPECT_EQ(value, static_cast<int>(settingDouble(Setting::WeftTimeout) * 1000)) << "WEFT_TIMEOUT in ms";
    ASSERT_EQ(getsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &value, &length), 0);
    EXPECT_LE(value, 30);
    ASSERT_EQ(getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &value, &length), 0);
    EXPECT_NE(value, 0);
    // connectSocket's callers expect a blocking socket, as before.
    EXPECT_EQ(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
  }
  for (int fd : {client, server, listener}) close(fd);
}

}  // namespace

TEST(ConnectionWithinHost, LoopbackOrTheLocalEndsOwnAddress) {
  auto address = [](const char* text) {
    SocketAddress a;
    EXPECT_EQ(parseSocketAddress(text, "test", &a), ncclSuccess) << text;
    return a;
  };
  EXPECT_TRUE(connectionWithinHost(address("127.0.0.1"), address("127.0.0.1")));
  EXPECT_TRUE(connectionWithinHost(address("198.18.0.1"), address("127.0.0.5")));
  EXPECT_TRUE(connectionWithinHost(address("198.18.0.1:40000"), address("198.18.0.1:5000")));
  EXPECT_FALSE(connectionWithinHost(address("198.18.0.1"), address("198.18.0.2")));
  EXPECT_TRUE(connectionWithinHost(address("[::1]:7"), address("[::1]:8")));
  EXPECT_TRUE(connectionWithinHost(address("[2001:db8::1]:7"), address("[2001:db8::1]:8")));
  EXPECT_FALSE(connectionWithinHost(address("[2001:db8::1]:7"), address("[2001:db8::2]:8")));
  EXPECT_FALSE(connectionWithinHost(address("[2001:db8::1]:7"), address("198.18.0.1:8")));
}
