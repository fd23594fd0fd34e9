// Attacks on admission (docs/security.md), each against the real bootstrap root and peer
// handshake: a recording of a real rank's hello replayed on a new connection is refused, a
// listener that does not hold the key is not trusted, idle connections by the thousand neither
// stall initialization nor spin the root, and a secret computed from public data is an error
// under WEFT_AUTH=required.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/cost/cost_model.h"
#include "common/deadline.h"
#include "common/message_auth.h"
#include "common/safe_file.h"
#include "common/socket.h"
#include "common/status.h"
#include "runtime/comm/bootstrap.h"
#include "runtime/comm/unique_id.h"
#include "topology/topology_xml.h"
#include "transport/peer_handshake.h"
#include "transport/shm/shm_segment.h"

using namespace weft;

namespace {

constexpr double kTimeout = 10;

SocketAddress loopback() {
  SocketAddress address;
  EXPECT_EQ(parseSocketAddress("127.0.0.1", "test", &address), ncclSuccess);
  return address;
}

// A relay on loopback that forwards one connection to `target` and records what the client
// sent: what an attacker on the path (or on the host, with a packet capture) could keep.
class RecordingRelay {
 public:
  explicit RecordingRelay(const SocketAddress& target) : target_(target) {
    SocketAddress any = loopback();
    any.setPort(0);
    EXPECT_EQ(listenSocket(any, &listenFd_, &address_), ncclSuccess);
    thread_ = std::thread([this] { relay(); });
  }
  ~RecordingRelay() {
    if (thread_.joinable()) thread_.join();
    closeSocket(listenFd_);
  }
  const SocketAddress& address() const { return address_; }
  // What the client sent, once the relay is done (the client or the server closed).
  std::string recorded() {
    if (thread_.joinable()) thread_.join();
    return fromClient_;
  }

 private:
  void relay() {
    int client = -1, server = -1;
    const Deadline deadline = Deadline::after(kTimeout);
    if (acceptSocket(listenFd_, deadline, &client, nullptr) != ncclSuccess) return;
    if (connectSocket(target_, deadline, &server) != ncclSuccess) {
      close(client);
      return;
    }
    char buffer[65536];
    for (bool open = true; open && !deadline.expired();) {
      pollfd fds[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
      if (poll(fds, 2, 100) <= 0) continue;
      for (int side = 0; side < 2 && open; ++side) {
        if (!fds[side].revents) continue;
        ssize_t n = recv(fds[side].fd, buffer, sizeof buffer, MSG_DONTWAIT);
        if (n <= 0) {
          open = n < 0 && errno == EAGAIN;
          continue;
        }
        if (side == 0) fromClient_.append(buffer, n);
        open = sendAll(fds[1 - side].fd, buffer, n, deadline) == ncclSuccess;
      }
    }
    close(client);
    close(server);
  }

  SocketAddress target_, address_;
  int listenFd_ = -1;
  std::thread thread_;
  std::string fromClient_;
};

// Connects to `where`, reads its first message (the challenge), sends `recording` and returns
// how many bytes came back after the challenge before the other side closed (-1: it never closed).
long replay(const SocketAddress& where, size_t challengeBytes, const std::string& recording) {
  int fd = -1;
  const Deadline deadline = Deadline::after(kTimeout);
  if (connectSocket(where, deadline, &fd) != ncclSuccess) return -2;
  std::vector<char> challenge(challengeBytes);
  if (recvAll(fd, challenge.data(), challenge.size(), deadline) != ncclSuccess ||
      sendAll(fd, recording.data(), recording.size(), deadline) != ncclSuccess) {
    close(fd);
    return -3;
  }
  long answered = 0;
  char buffer[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, deadline.millisecondsLeft(100)) <= 0) {
      if (deadline.expired()) break;
      continue;
    }
    ssize_t n = recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) {
      close(fd);
      return answered;
    }
    answered += n;
  }
  close(fd);
  return -1;
}

struct RankOutcome {
  ncclResult_t result = ncclInternalError;
  std::string message;
  BootstrapResult table;
};

// One rank's bootstrap (connect, hello, reply) on a thread, through `via` when it is given.
std::thread bootstrapRank(const UniqueIdContents& id, int nranks, int rank, RankOutcome* out,
                          const SocketAddress* via = nullptr) {
  return std::thread([=] {
    UniqueIdContents contents = id;
    if (via) contents.root = *via;
    int fd = -1;
    SocketAddress local;
    RankInfo mine{};
    mine.rank = rank;
    out->result = connectToRoot(contents, kTimeout, &fd, &local);
    if (out->result == ncclSuccess) out->result = exchangeRankInfo(fd, contents, nranks, mine, kTimeout, &out->table);
    out->message = lastErrorMessage();
    closeSocket(fd);
  });
}

UniqueIdContents newRoot(const BootstrapSecret& secret) {
  UniqueIdContents id;
  id.secret = secret;
  SocketAddress any = loopback();
  any.setPort(0);
  EXPECT_EQ(startBootstrapRoot(any, secret, &id.root), ncclSuccess) << lastErrorMessage();
  return id;
}

// A job that reuses its secret (NCCL_COMM_ID with a fixed WEFT_SECRET) is recorded once; the
// recording of rank 1's hello, replayed to the next job's root before the real rank 1 arrives,
// must not take rank 1's place (it would receive every rank's address and the communicator's
// key), and the real ranks must still form their communicator.
TEST(Replay, RecordedBootstrapHelloIsRefusedByTheNextRoot) {
  BootstrapSecret secret;
  ASSERT_EQ(randomSecret(&secret), ncclSuccess);
  std::string recording;
  {
    UniqueIdContents first = newRoot(secret);
    RecordingRelay relay(first.root);
    RankOutcome rank0, rank1;
    std::thread t1 = bootstrapRank(first, 2, 1, &rank1, &relay.address());
    std::thread t0 = bootstrapRank(first, 2, 0, &rank0);
    t0.join();
    t1.join();
    ASSERT_EQ(rank0.result, ncclSuccess) << rank0.message;
    ASSERT_EQ(rank1.result, ncclSuccess) << rank1.message;
    recording = relay.recorded();
  }
  ASSERT_GT(recording.size(), sizeof(RankInfo));

  UniqueIdContents second = newRoot(secret);
  constexpr size_t kChallengeBytes = 32;
  EXPECT_EQ(replay(second.root, kChallengeBytes, recording), 0) << "the root answered a replayed hello";
  RankOutcome rank0, rank1;
  std::thread t0 = bootstrapRank(second, 2, 0, &rank0);
  std::thread t1 = bootstrapRank(second, 2, 1, &rank1);
  t0.join();
  t1.join();
  EXPECT_EQ(rank0.result, ncclSuccess) << rank0.message;
  EXPECT_EQ(rank1.result, ncclSuccess) << rank1.message;
}

// A root that does not hold the secret (someone squatting the port, as another user could take
// a launcher's port) cannot make a rank accept its table, and learns nothing from the rank's
// hello: the secret is not in it.
TEST(Impostor, RootWithoutTheSecretIsNotBelieved) {
  BootstrapSecret real, other;
  ASSERT_EQ(randomSecret(&real), ncclSuccess);
  ASSERT_EQ(randomSecret(&other), ncclSuccess);
  UniqueIdContents squatted = newRoot(other);  // a weft root, but with another secret
  UniqueIdContents id = squatted;
  id.secret = real;
  RecordingRelay squatter(squatted.root);  // and it keeps what the rank sends
  RankOutcome rank0;
  bootstrapRank(id, 1, 0, &rank0, &squatter.address()).join();
  EXPECT_NE(rank0.result, ncclSuccess);
  // The squatter's root refuses the hello (it cannot verify it), so the rank hears nothing.
  EXPECT_NE(rank0.message.find("no answer"), std::string::npos) << rank0.message;
  // And what the rank sent does not hold the secret (the hello once carried it in clear).
  const std::string recording = squatter.recorded();
  ASSERT_GT(recording.size(), sizeof(RankInfo));
  EXPECT_EQ(recording.find(std::string(reinterpret_cast<const char*>(real.bytes), sizeof(real.bytes))),
            std::string::npos)
      << "the rank sent its secret to whoever listened";
}

// Both ends of a peer handshake, each a thread of this process.
struct HandshakePair {
  PeerHandshake lower, higher;  // ranks 0 and 1: rank 0 joins rank 1's listener
  SocketAddress lowerAddress, higherAddress;
  explicit HandshakePair(const MacKey& key, const MacKey& lowerKey) {
    EXPECT_EQ(lower.listen(loopback(), 0, 3, &lowerAddress), ncclSuccess);
    EXPECT_EQ(higher.listen(loopback(), 1, 3, &higherAddress), ncclSuccess);
    lower.setKey(lowerKey);
    higher.setKey(key);
  }
};

MacKey randomKey() {
  MacKey key;
  EXPECT_EQ(randomBytes(key.bytes, sizeof(key.bytes)), ncclSuccess);
  return key;
}

// Joins rank 1 from rank 0 (through `via` when given); returns both ends' results.
std::pair<ncclResult_t, ncclResult_t> join(HandshakePair& pair, const SocketAddress* via = nullptr) {
  int lowerFd = -1, higherFd = -1;
  ncclResult_t higherResult = ncclInternalError;
  std::thread accepting([&] { higherResult = pair.higher.join(0, pair.lowerAddress, 7, 0, &higherFd); });
  ncclResult_t lowerResult = pair.lower.join(1, via ? *via : pair.higherAddress, 7, 0, &lowerFd);
  accepting.join();
  closeSocket(lowerFd);
  closeSocket(higherFd);
  return {lowerResult, higherResult};
}

TEST(PeerHandshakeAuth, SameKeyJoinsAndAnotherKeyDoesNot) {
  const MacKey key = randomKey();
  HandshakePair good(key, key);
  auto [lower, higher] = join(good);
  EXPECT_EQ(lower, ncclSuccess);
  EXPECT_EQ(higher, ncclSuccess);

  HandshakePair bad(key, randomKey());
  auto [badLower, badHigher] = join(bad);
  EXPECT_NE(badLower, ncclSuccess);
  EXPECT_NE(badHigher, ncclSuccess) << "rank 1 accepted a joiner without the key";
}

// The recording of a real join, replayed on a new connection, is not accepted: the listener's
// challenge differs, so the hello's MAC does not match. (Before, a replay took the real
// connection's place.)
TEST(PeerHandshakeAuth, RecordedJoinIsRefused) {
  const MacKey key = randomKey();
  HandshakePair pair(key, key);
  RecordingRelay relay(pair.higherAddress);
  auto [lower, higher] = join(pair, &relay.address());
  ASSERT_EQ(lower, ncclSuccess);
  ASSERT_EQ(higher, ncclSuccess);
  const std::string recording = relay.recorded();
  ASSERT_FALSE(recording.empty());

  std::atomic<long> answered{-5};
  std::thread attacker([&] { answered = replay(pair.higherAddress, 24, recording); });
  int fd = -1;
  // Rank 1 waits for rank 0's next join; only the replay arrives.
  EXPECT_NE(pair.higher.join(0, pair.lowerAddress, 7, 0, &fd), ncclSuccess) << "rank 1 accepted a replayed join";
  closeSocket(fd);
  attacker.join();
  EXPECT_EQ(answered.load(), 0) << "rank 1 answered a replayed hello";
}

// Opens up to `count` idle connections to `where` (raising this process's descriptor limit);
// returns them.
std::vector<int> idleConnections(const SocketAddress& where, int count) {
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = std::min<rlim_t>(limit.rlim_max, count + 256);
  setrlimit(RLIMIT_NOFILE, &limit);
  std::vector<int> fds;
  for (int i = 0; i < count; ++i) {
    int fd = socket(where.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) break;
    // Non-blocking: connections beyond the listener's backlog stay half-open, as an attacker's would.
    (void)connect(fd, reinterpret_cast<const sockaddr*>(&where.storage), where.length);
    fds.push_back(fd);
  }
  return fds;
}

double processCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

// 2,000 idle connections at the root (this process hosts it) while 2 ranks bootstrap: they
// form their table within seconds, and the root thread does not spin meanwhile.
TEST(IdleConnections, TwoThousandAtTheRootNeitherStallNorSpin) {
  BootstrapSecret secret;
  ASSERT_EQ(randomSecret(&secret), ncclSuccess);
  UniqueIdContents id = newRoot(secret);
  int toParent[2];
  ASSERT_EQ(pipe(toParent), 0);
  pid_t attacker = fork();  // its own descriptor table, as another user's process would have
  ASSERT_GE(attacker, 0);
  if (attacker == 0) {
    std::vector<int> fds = idleConnections(id.root, 2000);
    char opened = fds.size() >= 2000 ? 1 : 0;
    (void)!write(toParent[1], &opened, 1);
    pause();  // until killed
    _exit(0);
  }
  char opened = 0;
  ASSERT_EQ(read(toParent[0], &opened, 1), 1);
  EXPECT_EQ(opened, 1) << "the attacker could not open 2,000 connections";
  const double cpuBefore = processCpuSeconds();
  const auto start = std::chrono::steady_clock::now();
  RankOutcome rank0, rank1;
  std::thread t0 = bootstrapRank(id, 2, 0, &rank0);
  std::thread t1 = bootstrapRank(id, 2, 1, &rank1);
  t0.join();
  t1.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu = processCpuSeconds() - cpuBefore;
  kill(attacker, SIGKILL);
  waitpid(attacker, nullptr, 0);
  close(toParent[0]);
  close(toParent[1]);
  EXPECT_EQ(rank0.result, ncclSuccess) << rank0.message;
  EXPECT_EQ(rank1.result, ncclSuccess) << rank1.message;
  EXPECT_LT(seconds, 5.0);
  EXPECT_LT(cpu, 0.8 * seconds + 0.5) << "the root spun while the strangers waited";
  std::printf("bootstrap of 2 ranks beside 2,000 idle connections: %.3f s, %.3f s of CPU\n", seconds, cpu);
}

// The same at a rank's data listener: rank 0 still joins rank 1 within the time-out.
TEST(IdleConnections, TwoThousandAtAPeerListenerDoNotStopAJoin) {
  const MacKey key = randomKey();
  HandshakePair pair(key, key);
  int toParent[2];
  ASSERT_EQ(pipe(toParent), 0);
  pid_t attacker = fork();
  ASSERT_GE(attacker, 0);
  if (attacker == 0) {
    std::vector<int> fds = idleConnections(pair.higherAddress, 2000);
    char opened = fds.size() >= 2000 ? 1 : 0;
    (void)!write(toParent[1], &opened, 1);
    pause();
    _exit(0);
  }
  char opened = 0;
  ASSERT_EQ(read(toParent[0], &opened, 1), 1);
  EXPECT_EQ(opened, 1);
  const auto start = std::chrono::steady_clock::now();
  auto [lower, higher] = join(pair);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  kill(attacker, SIGKILL);
  waitpid(attacker, nullptr, 0);
  close(toParent[0]);
  close(toParent[1]);
  EXPECT_EQ(lower, ncclSuccess);
  EXPECT_EQ(higher, ncclSuccess);
  EXPECT_LT(seconds, 3.0);
}

// A peer's segment header is the peer's word, in memory it can still write: a forged geometry
// is refused when the segment is opened, and one changed afterwards is never read.
TEST(ForgedSegment, BadGeometryIsAClearErrorAndLaterChangesAreIgnored) {
  ShmSegment real;
  ASSERT_EQ(real.create(ShmLayout{4096, 4, 2}), ncclSuccess) << lastErrorMessage();
  struct Forgery {
    const char* what;
    void (*apply)(ShmSegmentHeader*);
    const char* expected;
  };
  const Forgery forgeries[] = {
      {"slots", [](ShmSegmentHeader* h) { h->slots = 1000; }, "bad ring geometry"},
      {"slot bytes", [](ShmSegmentHeader* h) { h->slotBytes = 100; }, "bad ring geometry"},
      {"local ranks", [](ShmSegmentHeader* h) { h->localSize = 3; }, "its header says"},
      {"negative local ranks", [](ShmSegmentHeader* h) { h->localSize = -5; }, "local ranks"},
      {"magic", [](ShmSegmentHeader* h) { h->magic = 1; }, "not a weft segment"},
  };
  for (const Forgery& forgery : forgeries) {
    ShmSegmentHeader saved;
    std::memcpy(static_cast<void*>(&saved), real.header(), sizeof(saved));
    forgery.apply(real.header());
    ShmSegment opened;
    EXPECT_EQ(opened.open(dup(real.fd()), 1), ncclSystemError) << forgery.what;
    EXPECT_NE(lastErrorMessage().find(forgery.expected), std::string::npos)
        << forgery.what << ": " << lastErrorMessage();
    std::memcpy(static_cast<void*>(real.header()), &saved, sizeof(saved));
  }
  ShmSegment opened;
  ASSERT_EQ(opened.open(dup(real.fd()), 1), ncclSuccess) << lastErrorMessage();
  real.header()->slotBytes = 1ull << 40;  // after the check: must not move any slot
  EXPECT_EQ(opened.layout().slotBytes, 4096u);
  EXPECT_EQ(opened.slot(1, 3) - opened.slot(1, 0), 3 * 4096);
}

// A rank that holds the secret but sends a malformed record (an address longer than its field)
// makes every rank fail with a message naming it, instead of reading past the record.
TEST(ForgedRankTable, MalformedRecordIsAClearError) {
  BootstrapSecret secret;
  ASSERT_EQ(randomSecret(&secret), ncclSuccess);
  UniqueIdContents id = newRoot(secret);
  RankOutcome outcomes[2];
  std::thread ranks[2];
  for (int rank = 0; rank < 2; ++rank)
    ranks[rank] = std::thread([&, rank] {
      int fd = -1;
      SocketAddress local;
      RankInfo mine{};
      mine.rank = rank;
      if (rank == 1) mine.dataAddressLength = 5000;
      outcomes[rank].result = connectToRoot(id, kTimeout, &fd, &local);
      if (outcomes[rank].result == ncclSuccess)
        outcomes[rank].result = exchangeRankInfo(fd, id, 2, mine, kTimeout, &outcomes[rank].table);
      outcomes[rank].message = lastErrorMessage();
      closeSocket(fd);
    });
  for (auto& t : ranks) t.join();
  for (const RankOutcome& outcome : outcomes) {
    EXPECT_EQ(outcome.result, ncclSystemError);
    EXPECT_NE(outcome.message.find("rank 1's record is malformed"), std::string::npos) << outcome.message;
  }
}

// A directory of its own for the file tests, removed afterwards.
struct ScratchDirectory {
  std::string path;
  ScratchDirectory() {
    char name[] = "/tmp/weft-security-XXXXXX";
    path = mkdtemp(name) ? name : "";
  }
  ~ScratchDirectory() { (void)!system(("rm -rf '" + path + "'").c_str()); }
};

// Files a user names are read only when regular, never past a cap (counted while reading), and
// a FIFO never blocks the reader.
TEST(NamedFiles, OnlyRegularFilesWithinTheirCapAreRead) {
  ScratchDirectory scratch;
  ASSERT_FALSE(scratch.path.empty());
  LinkTable table;
  EXPECT_EQ(applyTuningFile("/dev/zero", &table), ncclInvalidArgument);
  EXPECT_NE(lastErrorMessage().find("not a regular file"), std::string::npos) << lastErrorMessage();
  const std::string fifo = scratch.path + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  TopologyModel model;
  EXPECT_EQ(loadTopologyFile(fifo, &model), ncclInvalidArgument);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2)) << "a FIFO blocked the reader";
  const std::string big = scratch.path + "/big";
  {
    FILE* f = fopen(big.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::string line = "# a comment line that makes the tuning file far longer than any real one\n";
    for (int i = 0; i < 20000; ++i) fputs(line.c_str(), f);
    fclose(f);
  }
  EXPECT_EQ(applyTuningFile(big, &table), ncclInvalidArgument);
  EXPECT_NE(lastErrorMessage().find("more than"), std::string::npos) << lastErrorMessage();
}

// The debug log is not written through a symbolic link planted at its path (another user's
// file would be appended to), and the topology dump goes through a temporary with a random
// name, so a link planted at a predictable one is never followed.
TEST(NamedFiles, CreatedFilesDoNotFollowPlantedLinks) {
  ScratchDirectory scratch;
  ASSERT_FALSE(scratch.path.empty());
  const std::string victim = scratch.path + "/victim";
  ASSERT_EQ(close(open(victim.c_str(), O_CREAT | O_WRONLY, 0600)), 0);
  const std::string log = scratch.path + "/weft.log";
  ASSERT_EQ(symlink(victim.c_str(), log.c_str()), 0);
  EXPECT_LT(openLogFile(log), 0) << "opened the log through a symbolic link";

  const std::string dump = scratch.path + "/topology.xml";
  for (const std::string& guess : {dump + ".tmp", dump + ".tmp." + std::to_string(getpid())})
    ASSERT_EQ(symlink(victim.c_str(), guess.c_str()), 0);
  ASSERT_EQ(replaceFile(dump, "<topology/>\n", "topology dump"), ncclSuccess) << lastErrorMessage();
  struct stat info {};
  ASSERT_EQ(stat(victim.c_str(), &info), 0);
  EXPECT_EQ(info.st_size, 0) << "the dump was written through a planted link";
  std::string written;
  ASSERT_EQ(readRegularFile(dump, 100, "dump", &written), ncclSuccess);
  EXPECT_EQ(written, "<topology/>\n");
}

TEST(PublicSecret, IsAnErrorUnderWeftAuthRequired) {
  setenv("NCCL_COMM_ID", "127.0.0.1:29999", 1);
  unsetenv("WEFT_SECRET");
  setenv("WEFT_AUTH", "required", 1);
  ncclUniqueId id;
  EXPECT_EQ(ncclGetUniqueId(&id), ncclInvalidUsage);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("WEFT_SECRET"), std::string::npos) << ncclGetLastError(nullptr);
  setenv("WEFT_SECRET", "00112233445566778899aabbccddeeff", 1);
  EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess) << ncclGetLastError(nullptr);
  unsetenv("WEFT_AUTH");
  unsetenv("WEFT_SECRET");
  unsetenv("NCCL_COMM_ID");
}

}  // namespace
