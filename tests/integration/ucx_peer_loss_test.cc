// A UCX peer that is gone by the time this side opens its endpoint must be an error naming the
// peer within the time-out, never an abort inside UCX. It happens when a rank dies between
// swapping worker addresses and the wire-up: the chaos test hit it, a rank killed while its
// peers connected lazily on the first all-to-all. UCX 1.13's newer protocols
// (UCX_PROTO_ENABLE=y) abort the process there (the send queued until the endpoint is
// connected has no abort function); its default ones fail the send, and the endpoint's error
// handler reports the peer.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "common/socket.h"
#include "common/status.h"
#include "transport/peer_handshake.h"
#include "transport/ucx/ucx_library.h"
#include "transport/ucx/ucx_transport.h"
#include "transport/ucx/ucx_worker.h"

using namespace weft;

namespace {

constexpr MacKey kKey = {{0x74, 0x65, 0x73, 0x74, 0x6b, 0x65, 0x79}};
constexpr double kTimeout = 10;

ncclResult_t listenOnLoopback(PeerHandshake* handshake, int rank, SocketAddress* bound) {
  SocketAddress loopback;
  WEFT_CHECK(parseSocketAddress("127.0.0.1", "test", &loopback));
  WEFT_CHECK(handshake->listen(loopback, rank, kTimeout, bound));
  handshake->setKey(kKey);
  return ncclSuccess;
}

// How the peer (rank 1) is lost.
enum class Loss {
  kWorkerGoneFirst,     // its worker is destroyed before it answers: nothing listens at its address
  kKilledUnprogressed,  // its worker lives but is never progressed, and the process is killed
};

// The peer (a child process): answers rank 0's handshake with the address of a UCX worker that
// is gone or about to be. With kWorkerGoneFirst it stays (its handshake socket open) until rank 0
// has its answer.
[[noreturn]] void lostPeer(Loss loss, int toParent, int fromParent) {
  alarm(60);  // never outlive a broken test
  PeerHandshake handshake;
  SocketAddress mine, parent;
  if (listenOnLoopback(&handshake, 1, &mine) != ncclSuccess) _exit(2);
  std::shared_ptr<UcxWorker> worker;
  if (UcxWorker::create("", &worker) != ncclSuccess) _exit(3);
  const std::vector<uint8_t> address = worker->address();
  if (loss == Loss::kWorkerGoneFirst) worker.reset();  // and with it the process's UCX context
  if (write(toParent, &mine, sizeof(mine)) != sizeof(mine)) _exit(4);
  if (read(fromParent, &parent, sizeof(parent)) != sizeof(parent)) _exit(4);
  int fd = -1;
  if (handshake.join(0, parent, UcxTransport::kHandshakeTag, 0, &fd) != ncclSuccess) _exit(5);
  std::vector<uint8_t> theirs;
  if (PeerHandshake::swap(fd, 0, address.data(), address.size(), 1 << 16, kTimeout, &theirs) != ncclSuccess) _exit(6);
  if (loss == Loss::kKilledUnprogressed) {
    usleep(200 * 1000);  // rank 0 opens its endpoint and starts the wire-up meanwhile
    kill(getpid(), SIGKILL);
  }
  char done = 0;
  (void)!read(fromParent, &done, 1);
  _exit(0);
}

// Connects rank 0 to such a peer with UCX limited to `tls` (UCX_TLS) and expects an error.
void expectAnErrorFromALostPeer(Loss loss, const char* tls) {
  std::string why;
  if (!loadUcxLibrary(&why)) GTEST_SKIP() << "skipped: UCX cannot be loaded: " << why;
  setenv("UCX_TLS", tls, 1);  // read when the first worker makes the process's context
  int toChild[2], toParent[2];
  ASSERT_EQ(pipe(toChild), 0);
  ASSERT_EQ(pipe(toParent), 0);
  pid_t child = fork();  // before this process makes any UCX thread
  ASSERT_GE(child, 0);
  if (child == 0) lostPeer(loss, toParent[1], toChild[0]);

  PeerHandshake handshake;
  TransportEndpoint peer;
  SocketAddress mine;
  ASSERT_EQ(listenOnLoopback(&handshake, 0, &mine), ncclSuccess) << lastErrorMessage();
  ASSERT_EQ(read(toParent[0], &peer.dataAddress, sizeof(peer.dataAddress)), ssize_t(sizeof(peer.dataAddress)));
  ASSERT_EQ(write(toChild[1], &mine, sizeof(mine)), ssize_t(sizeof(mine)));
  peer.rank = 1;

  UcxTransport transport(UcxTransport::settingsFromEnv());
  TransportSetup setup;
  setup.rank = 0;
  setup.nranks = 2;
  setup.timeoutSeconds = kTimeout;
  setup.handshake = &handshake;
  TransportEndpoint self;
  ASSERT_EQ(transport.listen(setup, &self), ncclSuccess) << lastErrorMessage();
  clearLastError();
  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<Connection> connection;
  ncclResult_t connected = transport.connect(peer, &connection);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string message = lastErrorMessage();

  char done = 1;
  ASSERT_EQ(write(toChild[1], &done, 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  if (loss == Loss::kWorkerGoneFirst)
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "peer status " << status;
  else
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "peer status " << status;
  for (int fd : {toChild[0], toChild[1], toParent[0], toParent[1]}) close(fd);

  EXPECT_NE(connected, ncclSuccess) << "connected to a worker that no longer exists";
  EXPECT_NE(message.find("rank 1"), std::string::npos) << message;
  EXPECT_LE(seconds, kTimeout + 1) << message;
  std::printf("%s: %.3f s, %s\n", tls, seconds, message.c_str());
}

TEST(UcxPeerLoss, WorkerGoneBeforeTheEndpointOpensIsAnErrorOverTcp) {
  expectAnErrorFromALostPeer(Loss::kWorkerGoneFirst, "tcp");
}

// The same with every transport UCX finds on this host (shared memory and tcp here).
TEST(UcxPeerLoss, WorkerGoneBeforeTheEndpointOpensIsAnErrorOverAnyTransport) {
  expectAnErrorFromALostPeer(Loss::kWorkerGoneFirst, "all");
}

TEST(UcxPeerLoss, PeerKilledDuringTheWireUpIsAnErrorOverTcp) {
  expectAnErrorFromALostPeer(Loss::kKilledUnprogressed, "tcp");
}

TEST(UcxPeerLoss, PeerKilledDuringTheWireUpIsAnErrorOverAnyTransport) {
  expectAnErrorFromALostPeer(Loss::kKilledUnprogressed, "all");
}

}  // namespace
