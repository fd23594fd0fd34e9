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
// long, then give the core away, then sleep. When ranks outnumber cores, spinning only steals
// the core the peer needs, so the spin phase is skipped.
constexpr auto kSpinTime = std::chrono::microseconds(30);
constexpr auto kYieldTime = std::chrono::microseconds(300);  // only for one thread driving several ranks
constexpr long kSleepMicros = 2000;                          // also bounds how late an abort or a dead peer is noticed

bool ranksOutnumberCores(const std::vector<ncclComm*>& comms) {
  static const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  size_t local = 0;
  for (ncclComm* comm : comms) local = std::max(local, comm->layout.localRanks.size());
  return static_cast<long>(local) > cores;
}

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}
}  // namespace

// deadline_ is set when a wait begins (idle()): a call that never waits reads no clock for it.
IdleWaiter::IdleWaiter(double timeoutSeconds) : timeoutSeconds_(timeoutSeconds) {}

void IdleWaiter::madeProgress() {
  idleRounds_ = 0;
  pastSpin_ = false;
}

int64_t IdleWaiter::idleSinceNs() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(idleSince_.time_since_epoch()).count();
}

ncclResult_t IdleWaiter::checkHealth(const std::vector<CollectiveRun*>& active, const std::vector<ncclComm*>& comms) {
  for (ncclComm* comm : comms)
    if (comm->state.aborted.load(std::memory_order_acquire) || comm->state.revoked.load(std::memory_order_acquire))
      return fail(ncclInvalidUsage, "rank %d: the communicator was %s while a collective was running", comm->rank,
                  comm->state.aborted.load() ? "aborted" : "revoked");
  for (CollectiveRun* run : active)
    for (Connection* c : run->waitingOn()) WEFT_CHECK(c->checkPeer());
  if (deadline_.expired()) {
    timedOut_ = true;
    std::string waiting = active.empty() ? std::string("nothing") : active.front()->describeWait();
    return fail(ncclRemoteError, "rank %d: no progress for %.0f s (WEFT_TIMEOUT) in %s: that peer is dead or stuck",
                comms.empty() ? -1 : comms.front()->rank, timeoutSeconds_, waiting.c_str());
  }
  return ncclSuccess;
}

ncclResult_t IdleWaiter::idle(const std::vector<CollectiveRun*>& active, const std::vector<ncclComm*>& comms,
                              const std::function<ncclResult_t(bool*)>& tryProgress) {
  if (idleRounds_++ == 0) {  // a new wait: the time-out counts from the last progress
    idleSince_ = std::chrono::steady_clock::now();
    deadline_ = Deadline::after(timeoutSeconds_);
    spin_ = !ranksOutnumberCores(comms);
  }
  auto idleFor = std::chrono::steady_clock::now() - idleSince_;
  if (spin_ && idleFor < kSpinTime) {
    for (int i = 0; i < 16; ++i) cpuRelax();
    return ncclSuccess;
  }
  pastSpin_ = true;
  WEFT_CHECK(checkHealth(active, comms));

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
  if (comms.size() != 1) {  // one thread driving several ranks: no single doorbell to sleep on
    if (idleFor < kYieldTime)
      sched_yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    return ncclSuccess;
  }
  Doorbell* doorbell = communicatorDoorbell(comms.front());
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
