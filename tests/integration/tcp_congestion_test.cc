// WEFT_TCP_CONGESTION (transport/tcp/tcp_congestion.h) on real TCP connections between two
// transports of this process over loopback: what the kernel reports for each data socket
// (getsockopt TCP_CONGESTION on every connected socket of the pair, found in /proc/self/fd), one
// socket per pair and striped over four.
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/socket.h"
#include "common/status.h"
#include "tests/support/transport_side.h"
#include "transport/transport_table.h"

using namespace weft;

namespace {

constexpr MacKey kKey = {{0x63, 0x6f, 0x6e, 0x67, 0x65, 0x73, 0x74}};
constexpr double kSetupTimeout = 20;

using weft::testing::listenOnLoopback;
using weft::testing::TransportSide;

// The congestion control of every connected TCP socket of this process with an end on one of
// `ports`: the data sockets of the pair (each side's handshake listener is one end of them).
std::vector<std::string> congestionOfSocketsOn(const std::vector<int>& ports) {
  std::vector<std::string> found;
  DIR* fds = opendir("/proc/self/fd");
  if (!fds) return found;
  while (dirent* entry = readdir(fds)) {
    const int fd = atoi(entry->d_name);
    if (entry->d_name[0] == '.' || fd == dirfd(fds)) continue;
    int type = 0;
    socklen_t length = sizeof(type);
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) != 0 || type != SOCK_STREAM) continue;
    SocketAddress local, peer;
    local.length = peer.length = sizeof(sockaddr_storage);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local.storage), &local.length) != 0) continue;
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer.storage), &peer.length) != 0) continue;  // a listener
    bool onPair = false;
    for (int port : ports) onPair = onPair || local.port() == port || peer.port() == port;
    if (!onPair) continue;
    char name[16] = {};  // TCP_CA_NAME_MAX (linux/tcp.h)
    length = sizeof(name);
    if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &length) != 0) continue;
    found.emplace_back(name, strnlen(name, sizeof(name)));
  }
  closedir(fds);
  return found;
}

std::string systemCongestionControl() {
  std::string name;
  std::ifstream("/proc/sys/net/ipv4/tcp_congestion_control") >> name;
  return name;
}

class TcpCongestion : public ::testing::Test {
 protected:
  void TearDown() override {
    unsetenv("WEFT_TCP_CONGESTION");
    unsetenv("NCCL_NSOCKS_PERTHREAD");
  }

  // Connects the two sides (each connect on its own thread: each waits for the other); the
  // results of both, and their error messages.
  void connectPair(ncclResult_t* resultA, ncclResult_t* resultB, std::string* errors) {
    const TransportEntry& tcp = *findTransport("tcp");
    ASSERT_EQ(listenOnLoopback(tcp, 0, kKey, kSetupTimeout, &a_), ncclSuccess) << lastErrorMessage();
    ASSERT_EQ(listenOnLoopback(tcp, 1, kKey, kSetupTimeout, &b_), ncclSuccess) << lastErrorMessage();
    std::string errorB;
    std::thread other([&] {
      *resultB = b_.transport->connect(a_.endpoint, &fromB_);
      if (*resultB != ncclSuccess) errorB = lastErrorMessage();
    });
    *resultA = a_.transport->connect(b_.endpoint, &fromA_);
    if (*resultA != ncclSuccess) *errors = lastErrorMessage();
    other.join();
    *errors += " | " + errorB;
  }

  // Connects the pair, which must succeed, and returns the congestion control of its sockets.
  void connectAndReadCongestion(std::vector<std::string>* found) {
    ncclResult_t a = ncclInternalError, b = ncclInternalError;
    std::string errors;
    connectPair(&a, &b, &errors);
    ASSERT_EQ(a, ncclSuccess) << errors;
    ASSERT_EQ(b, ncclSuccess) << errors;
    *found = congestionOfPair();
  }

  std::vector<std::string> congestionOfPair() const {
    return congestionOfSocketsOn({a_.endpoint.dataAddress.port(), b_.endpoint.dataAddress.port()});
  }

  TransportSide a_, b_;
  std::unique_ptr<Connection> fromA_, fromB_;
};

TEST_F(TcpCongestion, PeersOnThisHostUseRenoByDefault) {
  std::vector<std::string> found;
  ASSERT_NO_FATAL_FAILURE(connectAndReadCongestion(&found));
  ASSERT_EQ(found.size(), 2u) << "one socket at each end";
  for (const std::string& name : found) EXPECT_EQ(name, "reno");
}

TEST_F(TcpCongestion, EverySocketOfAStripedPairIsSet) {
  setenv("NCCL_NSOCKS_PERTHREAD", "4", 1);
  std::vector<std::string> found;
  ASSERT_NO_FATAL_FAILURE(connectAndReadCongestion(&found));
  ASSERT_EQ(found.size(), 8u) << "four sockets at each end";
  for (const std::string& name : found) EXPECT_EQ(name, "reno");
}

TEST_F(TcpCongestion, SystemLeavesTheKernelsDefault) {
  const std::string system = systemCongestionControl();
  if (system.empty()) GTEST_SKIP() << "skipped: /proc/sys/net/ipv4/tcp_congestion_control is not readable";
  setenv("WEFT_TCP_CONGESTION", "system", 1);
  std::vector<std::string> found;
  ASSERT_NO_FATAL_FAILURE(connectAndReadCongestion(&found));
  ASSERT_EQ(found.size(), 2u);
  for (const std::string& name : found) EXPECT_EQ(name, system);
}

TEST_F(TcpCongestion, ANameTheKernelRefusesFailsTheConnectionNamingTheSetting) {
  setenv("WEFT_TCP_CONGESTION", "no-such-congestion-control", 1);
  ncclResult_t a = ncclSuccess, b = ncclSuccess;
  std::string errors;
  connectPair(&a, &b, &errors);
  EXPECT_EQ(a, ncclInvalidArgument);
  EXPECT_EQ(b, ncclInvalidArgument);
  EXPECT_NE(errors.find("WEFT_TCP_CONGESTION=no-such-congestion-control"), std::string::npos) << errors;
  EXPECT_TRUE(congestionOfPair().empty()) << "the refused sockets are closed";
}

}  // namespace
