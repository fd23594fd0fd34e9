// The fd broker hands memory descriptors between processes of one user: the receiver maps the
// same memory, a wrong or withdrawn ticket is refused, the mapping outlives the owner, and the
// broker's thread exists only while an offer is open, and the owner's pidfd comes along.
#include "transport/fd_broker.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "common/status.h"
#include "tests/support/process_usage.h"
#include "transport/peer_process.h"

namespace weft {
namespace {

using testing::threadsInThisProcess;

constexpr size_t kBytes = 1 << 16;
constexpr double kTimeout = 10;

int makeMemfd(char fill) {
  int fd = memfd_create("fd-broker-test", MFD_CLOEXEC);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(ftruncate(fd, kBytes), 0);
  void* p = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  std::memset(p, fill, kBytes);
  munmap(p, kBytes);
  return fd;
}

char* mapFd(int fd) {
  void* p = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? nullptr : static_cast<char*>(p);
}

// Forks a child that runs `body` and exits with its result; the parent gets its exit code.
// Only while this process runs no other thread (the broker's): see docs/developer-notes.md.
template <typename Body>
pid_t forkChild(Body body) {
  EXPECT_EQ(threadsInThisProcess(), 1) << "forking while a thread runs";
  pid_t pid = fork();
  if (pid == 0) _exit(body());
  return pid;
}

int waitChild(pid_t pid) {
  int status = 0;
  for (int i = 0; i < 2000; ++i) {  // at most 20 s
    if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return 124;
}

TEST(FdBroker, AnotherProcessMapsTheSameMemory) {
  int toChild[2];
  ASSERT_EQ(pipe(toChild), 0);
  // The child is forked before the broker's thread exists.
  pid_t child = forkChild([&] {
    FdTicket ticket;
    if (read(toChild[0], &ticket, sizeof ticket) != sizeof ticket) return 1;
    int fd = -1;
    if (fetchFileDescriptor(ticket, kTimeout, &fd) != ncclSuccess) return 2;
    char* p = mapFd(fd);
    if (!p || p[0] != 'a' || p[kBytes - 1] != 'a') return 3;
    std::memset(p, 'b', kBytes);  // the parent sees this through its own mapping
    return 0;
  });
  int fd = makeMemfd('a');
  FdTicket ticket;
  ASSERT_EQ(offerFileDescriptor(fd, &ticket), ncclSuccess) << lastErrorMessage();
  ASSERT_EQ(write(toChild[1], &ticket, sizeof ticket), static_cast<ssize_t>(sizeof ticket));
  EXPECT_EQ(waitChild(child), 0);
  char* mine = mapFd(fd);
  ASSERT_NE(mine, nullptr);
  EXPECT_EQ(mine[0], 'b');
  EXPECT_EQ(mine[kBytes - 1], 'b');
  munmap(mine, kBytes);
  withdrawFileDescriptor(ticket);
  close(fd);
  close(toChild[0]);
  close(toChild[1]);
}

TEST(FdBroker, WrongSecretIsRefused) {
  int fd = makeMemfd('a');
  FdTicket ticket;
  ASSERT_EQ(offerFileDescriptor(fd, &ticket), ncclSuccess);
  FdTicket forged = ticket;
  forged.secret[1] ^= 1;
  int got = -1;
  EXPECT_EQ(fetchFileDescriptor(forged, kTimeout, &got), ncclRemoteError);
  EXPECT_EQ(got, -1);
  EXPECT_NE(lastErrorMessage().find("refused"), std::string::npos) << lastErrorMessage();
  // The right ticket still works after a refusal.
  EXPECT_EQ(fetchFileDescriptor(ticket, kTimeout, &got), ncclSuccess) << lastErrorMessage();
  EXPECT_GE(got, 0);
  close(got);
  withdrawFileDescriptor(ticket);
  close(fd);
}

TEST(FdBroker, WithdrawnOfferIsRefusedAndTheThreadStops) {
  testing::startThreadRuntime();
  const int before = threadsInThisProcess();
  int first = makeMemfd('a'), second = makeMemfd('b');
  FdTicket one, two;
  ASSERT_EQ(offerFileDescriptor(first, &one), ncclSuccess);
  ASSERT_EQ(offerFileDescriptor(second, &two), ncclSuccess);
  EXPECT_EQ(threadsInThisProcess(), before + 1);  // one broker thread for every offer
  withdrawFileDescriptor(one);
  int got = -1;
  EXPECT_EQ(fetchFileDescriptor(one, kTimeout, &got), ncclRemoteError);
  EXPECT_EQ(fetchFileDescriptor(two, kTimeout, &got), ncclSuccess) << lastErrorMessage();
  close(got);
  withdrawFileDescriptor(two);
  EXPECT_EQ(threadsInThisProcess(), before);
  // Nobody listens any more: refused at once, not after the time-out.
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(fetchFileDescriptor(two, kTimeout, &got), ncclRemoteError);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  close(first);
  close(second);
}

// A forked process that offers a memfd filled with `fill`, hands the ticket to this one and exits
// (without withdrawing or closing anything) once released.
class OwnerProcess {
 public:
  explicit OwnerProcess(char fill) {
    EXPECT_EQ(pipe(fromChild_), 0);
    EXPECT_EQ(pipe(release_), 0);
    pid_ = forkChild([&] {
      int fd = makeMemfd(fill);
      FdTicket ticket;
      if (offerFileDescriptor(fd, &ticket) != ncclSuccess) return 1;
      if (write(fromChild_[1], &ticket, sizeof ticket) != sizeof ticket) return 2;
      char done;
      if (read(release_[0], &done, 1) != 1) return 3;
      return 0;
    });
    EXPECT_EQ(read(fromChild_[0], &ticket_, sizeof ticket_), static_cast<ssize_t>(sizeof ticket_));
  }
  ~OwnerProcess() {
    for (int end : {fromChild_[0], fromChild_[1], release_[0], release_[1]}) close(end);
  }
  pid_t pid() const { return pid_; }
  const FdTicket& ticket() const { return ticket_; }
  bool release() { return write(release_[1], "x", 1) == 1; }

 private:
  int fromChild_[2] = {-1, -1}, release_[2] = {-1, -1};
  pid_t pid_ = -1;
  FdTicket ticket_;
};

TEST(FdBroker, MappingOutlivesTheOwner) {
  OwnerProcess owner('z');
  const FdTicket ticket = owner.ticket();
  int fd = -1;
  ASSERT_EQ(fetchFileDescriptor(ticket, kTimeout, &fd), ncclSuccess) << lastErrorMessage();
  ASSERT_TRUE(owner.release());
  EXPECT_EQ(waitChild(owner.pid()), 0);
  char* p = mapFd(fd);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p[kBytes / 2], 'z');
  p[0] = 'y';
  EXPECT_EQ(p[0], 'y');
  munmap(p, kBytes);
  close(fd);
  // Its broker went with it.
  int again = -1;
  EXPECT_EQ(fetchFileDescriptor(ticket, kTimeout, &again), ncclRemoteError);
}

// The owner's pidfd comes with the descriptor: it names the owner process and turns readable
// once the owner exits, before anyone reaps it (the parent here reaps only afterwards).
TEST(FdBroker, OwnersPidfdComesWithTheDescriptorAndSeesItsExit) {
  OwnerProcess owner('p');
  int fd = -1, ownerPidfd = -1;
  ASSERT_EQ(fetchFileDescriptor(owner.ticket(), kTimeout, &fd, &ownerPidfd), ncclSuccess) << lastErrorMessage();
  ASSERT_GE(ownerPidfd, 0) << "no pidfd (kernel before 5.3?)";
  PeerProcess process(ownerPidfd, owner.pid());
  EXPECT_FALSE(process.exited()) << "the owner is still waiting for the release";
  ASSERT_TRUE(owner.release());
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(owner.pid()), &info, WEXITED | WNOWAIT), 0);  // a zombie now
  EXPECT_TRUE(process.exited()) << "the owner exited but is not reaped";
  EXPECT_EQ(waitChild(owner.pid()), 0);
  EXPECT_TRUE(process.exited());
  close(fd);
}

}  // namespace
}  // namespace weft
