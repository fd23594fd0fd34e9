#include "runtime/exec/idle_waiter.h"

#include <poll.h>
#include <sched.h>

#include <unistd.h>

#include <algorithm>
#include <thread>

#include "common/status.h"
#include "runtime/comm/communicator.h"

namespace weft {

namespace {
// A peer is usually a few microseconds away (it is reducing the slice we wait for): spin that
// long, then sleep. When ranks outnumber cores, spinning only steals the core the peer needs:
// the rank yields the core instead, until kYieldTime, then sleeps. Measured on 2 cores
// (docs/performance.md, "Ranks sharing cores"): 4 ranks, 8-byte all-reduce 3.1-3.8 us yielding
// against 27-30 us sleeping at once, at half the CPU time. Yielding after the spin with no more
// ranks than cores helped 2 ranks beside busy processes (3-8 us instead of 13-47 us in their
// bad runs) but made three namespace hosts' ranks on the 2 cores ping-pong at 47 us instead of
// 13 (netns.hosts3.characterize_slow_host, after netns.hosts2x2.status_across_hosts), a case
// the layout cannot see (one rank per host): so it is not done.
constexpr auto kSpinTime = std::chrono::microseconds(30);
constexpr auto kYieldTime = std::chrono::microseconds(300);  // bounds the CPU a late peer costs
constexpr long kSleepMicros = 2000;                          // also bounds how late an abort or a dead peer is noticed

bool ranksOutnumberCores(std::span<ncclComm* const> comms) {
  static const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  size_t local = 0;
  for (ncclComm* comm : comms) local = std::max(local, comm->layout.localRanks.size());
  return static_cast<long>(local) > cores;
}

// A peer this call waits on: alive, not aborted, and still in the call (a peer whose
// communicator failed sends nothing more).
ncclResult_t checkPeer(Connection* peer) {
  WEFT_CHECK(peer->checkPeer());
  return peer->checkPeerCarriesOn();
}

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}
}  // namespace

void IdleWaiter::madeProgress() {
  idleRounds_ = 0;
  pastSpin_ = false;
  deadlineSet_ = false;
}

int64_t IdleWaiter::idleSinceNs() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(idleSince_.time_since_epoch()).count();
}

bool IdleWaiter::busyWaiting(int pausesPerLook) {
  if (idleRounds_++ == 0) {  // a new wait: the time-out counts from the last progress
    idleSince_ = std::chrono::steady_clock::now();
    spin_ = !ranksOutnumberCores(comms_);
  }
  // The clock (28 ns here) is read about every 16 pauses (25 ns each).
  if (spin_) {
    const bool readClock = pausesPerLook >= 16 || idleRounds_ % 16 == 0;
    if (!readClock || std::chrono::steady_clock::now() - idleSince_ < kSpinTime) {
      for (int i = 0; i < pausesPerLook; ++i) cpuRelax();
      return true;
    }
  } else if (std::chrono::steady_clock::now() - idleSince_ < kYieldTime) {
    sched_yield();
    return true;
  }
  pastSpin_ = true;
  return false;
}

ncclResult_t IdleWaiter::checkAborted() const {
  for (ncclComm* comm : comms_)
    if (comm->state.aborted.load(std::memory_order_acquire) || comm->state.revoked.load(std::memory_order_acquire))
      return fail(ncclInvalidUsage, "rank %d: the communicator was %s while a collective was running", comm->rank,
                  comm->state.aborted.load() ? "aborted" : "revoked");
  return ncclSuccess;
}

ncclResult_t IdleWaiter::checkDeadline(const std::function<std::string()>& describe) {
  if (!deadlineSet_) {  // counted from the start of this wait
    deadlineSet_ = true;
    timeoutSeconds_ = communicatorTimeout(comms_.front());
    for (ncclComm* comm : comms_) timeoutSeconds_ = std::min(timeoutSeconds_, communicatorTimeout(comm));
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - idleSince_).count();
    deadline_ = Deadline::after(timeoutSeconds_ - waited);
  }
  if (deadline_.expired()) {
    timedOut_ = true;
    return fail(ncclRemoteError, "rank %d: no progress for %.0f s (WEFT_TIMEOUT) in %s: that peer is dead or stuck",
                comms_.front()->rank, timeoutSeconds_, describe().c_str());
  }
  return ncclSuccess;
}

ncclResult_t IdleWaiter::idle(const std::vector<CollectiveRun*>& active,
                              const std::function<ncclResult_t(bool*)>& tryProgress) {
  // A look here is a pass of the executor over the transports (for TCP, recv calls): looking
  // after every pause made three TCP ranks on two cores ping-pong 3x slower
  // (netns.hosts3.characterize_slow_host), so a look comes every 16 pauses.
  if (busyWaiting(16)) return ncclSuccess;
  WEFT_CHECK(checkAborted());
  for (CollectiveRun* run : active)
    for (Connection* c : run->waitingOn()) WEFT_CHECK(checkPeer(c));
  WEFT_CHECK(checkDeadline([&] { return active.empty() ? std::string("nothing") : active.front()->describeWait(); }));

  // Then block until something can move: sockets wake poll(), shared memory the doorbell.
  // (Yielding instead would hand the core to any other runnable process for a whole time slice.)
  std::vector<pollfd> fds;
  std::vector<Connection*> polled;
  bool pending = false;  // a transport has activity its fd would not signal: progress, don't sleep
  for (CollectiveRun* run : active)
    for (Connection* c : run->connections())
      if (c->pollFd() >= 0) {
        if (!c->armPollFd()) {
          pending = true;
          (void)c->progress();
        }
        fds.push_back({c->pollFd(), static_cast<short>(POLLIN | (c->hasPendingSends() ? POLLOUT : 0)), 0});
        polled.push_back(c);
      }
  if (pending) return ncclSuccess;
  if (!fds.empty()) {
    poll(fds.data(), fds.size(), 1);
    // Let the transport take what woke us, even from a peer no step waits on yet: a peer that
    // closed is then seen as closed and leaves the poll set, instead of waking it at once, forever.
    // An error stays in the connection for checkPeer or recvPeek, when a step waits on that peer.
    for (size_t i = 0; i < fds.size(); ++i)
      if (fds[i].revents) (void)polled[i]->progress();
    return ncclSuccess;
  }
  return sleepOnDoorbell(tryProgress);
}

ncclResult_t IdleWaiter::idleOn(Connection* peer, const std::function<std::string()>& describe,
                                const std::function<ncclResult_t(bool*)>& tryProgress) {
  // A look is one load of the mailbox's cache line: look after every pause, so the message is
  // taken within tens of nanoseconds (16 pauses per look cost an 8-byte call 0.2 us).
  if (busyWaiting(1)) return ncclSuccess;
  WEFT_CHECK(checkAborted());
  WEFT_CHECK(checkPeer(peer));
  WEFT_CHECK(checkDeadline(describe));
  return sleepOnDoorbell(tryProgress);
}

ncclResult_t IdleWaiter::sleepOnDoorbell(const std::function<ncclResult_t(bool*)>& tryProgress) {
  if (comms_.size() != 1) {  // one thread driving several ranks: no single doorbell to sleep on
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    return ncclSuccess;
  }
  Doorbell* doorbell = communicatorDoorbell(comms_.front());
  if (!doorbell) {  // nothing rings: sleep briefly
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    return ncclSuccess;
  }
  uint32_t seen = doorbell->arm();
  bool moved = false;
  ncclResult_t result = tryProgress(&moved);
  if (result == ncclSuccess && !moved) doorbell->wait(seen, kSleepMicros);
  doorbell->disarm();
  if (moved) madeProgress();
  return result;
}

}  // namespace weft
