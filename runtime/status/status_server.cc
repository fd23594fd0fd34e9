#include "runtime/status/status_server.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <vector>

#include "common/cycle_clock.h"
#include "common/log.h"
#include "common/settings.h"
#include "common/socket.h"
#include "common/status.h"
#include "common/tls_session.h"
#include "runtime/comm/communicator.h"
#include "runtime/exec/collective_record.h"
#include "runtime/status/remote_status.h"
#include "runtime/status/status_report.h"

namespace weft {

namespace {

constexpr int kRequestTimeoutMs = 1000;  // a client that connects and says nothing is dropped
constexpr size_t kMaxRequest = 64;
constexpr double kRemoteTimeoutSeconds = 1.0;  // a job request waits this long for other hosts

// Never destroyed: a communicator may be destroyed while the process exits.
struct ServerState {
  std::mutex lifecycle;  // held by add and remove across starting and joining the thread
  std::mutex registry;   // the communicators; held while an answer reads them
  std::vector<ncclComm*> comms;
  std::vector<int> retiredFds;  // removed communicators' TCP endpoints, closed by the thread
  std::condition_variable retiredClosed;
  bool running = false;  // the thread runs (a forked child has none)
  pthread_t thread{};
  int listenFd = -1;
  int wakeFds[2] = {-1, -1};    // a byte on [1] tells the thread to leave
  int signalFds[2] = {-1, -1};  // WEFT_DUMP_SIGNAL's handler writes a byte on [1]
  int dumpSignal = 0;           // the signal handled, 0: none
  struct sigaction previousAction {};
  bool forkHandlersSet = false;
};

// Where the signal handler writes (async-signal-safe: a lock-free atomic and write()).
std::atomic<int> signalWriteFd{-1};

void onDumpSignal(int) {
  const int saved = errno;
  const int fd = signalWriteFd.load(std::memory_order_relaxed);
  const char byte = 0;
  if (fd >= 0) (void)!write(fd, &byte, 1);
  errno = saved;
}

// WEFT_DUMP_SIGNAL's number, 0 for none.
int dumpSignalNumber() {
  const std::optional<std::string> name = settingString(Setting::WeftDumpSignal);
  if (name == "SIGUSR1") return SIGUSR1;
  if (name == "SIGUSR2") return SIGUSR2;
  return 0;
}

void restoreSignal(ServerState& s) {
  if (!s.dumpSignal) return;
  signalWriteFd.store(-1, std::memory_order_relaxed);
  sigaction(s.dumpSignal, &s.previousAction, nullptr);
  s.dumpSignal = 0;
}

ServerState& state() {
  static ServerState* s = new ServerState;
  return *s;
}

void closeFds(ServerState& s) {
  for (int* fd : {&s.listenFd, &s.wakeFds[0], &s.wakeFds[1], &s.signalFds[0], &s.signalFds[1]}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
}

// A forked child has the registry and the sockets but not the thread: it starts afresh.
void beforeFork() {
  state().lifecycle.lock();
  state().registry.lock();
}
void afterForkInParent() {
  state().registry.unlock();
  state().lifecycle.unlock();
}
void afterForkInChild() {
  ServerState& s = state();
  restoreSignal(s);
  closeFds(s);
  for (int fd : s.retiredFds) close(fd);
  s.retiredFds.clear();
  s.running = false;
  s.comms.clear();
  s.registry.unlock();
  s.lifecycle.unlock();
}

// The same user, or root, may ask.
bool mayAsk(int fd) {
  const std::optional<uid_t> uid = socketPeerUid(fd);
  return uid && (*uid == geteuid() || *uid == 0);
}

void serveOne(int fd) {
  if (!mayAsk(fd)) return;
  std::string request;
  char buffer[kMaxRequest];
  while (request.find('\n') == std::string::npos && request.size() < kMaxRequest) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, kRequestTimeoutMs) <= 0) return;
    ssize_t n = recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) return;
    request.append(buffer, static_cast<size_t>(n));
  }
  const size_t newline = request.find('\n');
  if (newline == std::string::npos) return;
  const std::string answer = answerStatusRequest(request.substr(0, newline));
  (void)sendAll(fd, answer.data(), answer.size(), Deadline::after(kRequestTimeoutMs / 1000.0));  // an asker that left
}

// Every communicator of the process is asked to dump its record (WEFT_DUMP_SIGNAL).
void requestDumps() {
  ServerState& s = state();
  std::lock_guard<std::mutex> lock(s.registry);
  for (ncclComm* comm : s.comms) comm->exec.dumpRequested.store(true, std::memory_order_relaxed);
  WEFT_WARN("WEFT_DUMP_SIGNAL: %zu communicator(s) asked to dump their collective record", s.comms.size());
}

// The thread: sleeps in poll until asked (on the Unix socket, or on a communicator's TCP
// endpoint), signalled, or woken to look at the registry again ('r') or to leave ('s').
struct ThreadFds {
  int listen, wake, signal;  // signal: -1 without WEFT_DUMP_SIGNAL
};

// A communicator's TCP endpoint as the thread polls it.
struct Endpoint {
  int fd;
  std::string commId;
  MacKey key;
};

// Closes what removed communicators left for the thread, and lists the endpoints to poll.
std::vector<Endpoint> endpointsToPoll() {
  ServerState& s = state();
  std::lock_guard<std::mutex> lock(s.registry);
  for (int fd : s.retiredFds) close(fd);
  s.retiredFds.clear();
  s.retiredClosed.notify_all();
  std::vector<Endpoint> endpoints;
  for (ncclComm* comm : s.comms)
    if (comm->net.statusListenFd >= 0)
      endpoints.push_back(
          Endpoint{comm->net.statusListenFd, communicatorIdText(comm->exec.traceId), statusRequestKey(comm)});
  return endpoints;
}

// The registered communicator named `commId`, or null; with the registry's lock held.
ncclComm* registeredCommunicator(const ServerState& s, const std::string& commId) {
  for (ncclComm* comm : s.comms)
    if (communicatorIdText(comm->exec.traceId) == commId) return comm;
  return nullptr;
}

// What a rank on another host is told: the communicator `commId`'s status, if it is still here.
std::string answerRemote(const std::string& commId, const std::string& kind) {
  ServerState& s = state();
  std::lock_guard<std::mutex> lock(s.registry);
  ncclComm* comm = registeredCommunicator(s, commId);
  return comm ? encodeStatus({communicatorStatus(comm, kind == "status stats", kind == "dump")}) : "";
}

void* serve(void* arg) {
  const ThreadFds fds = *static_cast<const ThreadFds*>(arg);
  std::vector<Endpoint> endpoints = endpointsToPoll();
  for (;;) {
    std::vector<pollfd> p = {{fds.listen, POLLIN, 0}, {fds.wake, POLLIN, 0}, {fds.signal, POLLIN, 0}};
    for (const Endpoint& e : endpoints) p.push_back({e.fd, POLLIN, 0});
    if (poll(p.data(), p.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return nullptr;
    }
    if (p[1].revents) {
      char bytes[64];
      ssize_t n;
      while ((n = read(fds.wake, bytes, sizeof bytes)) > 0)
        if (std::memchr(bytes, 's', static_cast<size_t>(n))) return nullptr;
      endpoints = endpointsToPoll();
      continue;  // the endpoints' revents belong to the old list
    }
    if (fds.signal >= 0 && p[2].revents) {
      char drain[64];
      while (read(fds.signal, drain, sizeof drain) > 0) {}
      requestDumps();
    }
    for (size_t k = 0; k < endpoints.size(); ++k) {
      if (!p[3 + k].revents) continue;
      int fd = accept4(endpoints[k].fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      const std::string& commId = endpoints[k].commId;
      serveRemoteRequest(fd, endpoints[k].key, commId, kRequestTimeoutMs / 1000.0,
                         [&](const std::string& kind) { return answerRemote(commId, kind); });
      close(fd);
    }
    if (!p[0].revents) continue;
    int fd = accept4(fds.listen, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;  // the asker left already, or no memory for now
    serveOne(fd);
    close(fd);
  }
}

void wakeThread(ServerState& s, char why) {
  if (s.running && write(s.wakeFds[1], &why, 1) != 1) WEFT_WARN("WEFT_STATUS_SERVER: cannot wake its thread");
}

// WEFT_DUMP_SIGNAL: a handler that only writes a byte for the thread. False (with a warning)
// when it cannot be set up; the server runs without it.
bool installDumpSignal(ServerState& s) {
  const int number = dumpSignalNumber();
  if (!number) return true;
  if (pipe2(s.signalFds, O_CLOEXEC | O_NONBLOCK) != 0) return false;
  signalWriteFd.store(s.signalFds[1], std::memory_order_relaxed);
  struct sigaction action {};
  action.sa_handler = onDumpSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  if (sigaction(number, &action, &s.previousAction) != 0) {
    signalWriteFd.store(-1, std::memory_order_relaxed);
    for (int& fd : s.signalFds) {
      close(fd);
      fd = -1;
    }
    return false;
  }
  s.dumpSignal = number;
  return true;
}

// With the lifecycle lock held.
void startThread(ServerState& s) {
  if (s.running) return;
  if (!s.forkHandlersSet) {
    pthread_atfork(beforeFork, afterForkInParent, afterForkInChild);
    s.forkHandlersSet = true;
  }
  s.listenFd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);  // accept never blocks the thread
  sockaddr_un address;
  const socklen_t length = abstractUnixAddress(statusSocketName(getpid()), &address);
  if (s.listenFd < 0 || bind(s.listenFd, reinterpret_cast<const sockaddr*>(&address), length) != 0 ||
      listen(s.listenFd, 16) != 0 || pipe2(s.wakeFds, O_CLOEXEC | O_NONBLOCK) != 0) {
    WEFT_WARN("WEFT_STATUS_SERVER: cannot listen on @%s (%s); weft-info status will not see this process",
              statusSocketName(getpid()).c_str(), strerror(errno));
    closeFds(s);
    return;
  }
  if (!installDumpSignal(s)) {
    WEFT_WARN("WEFT_DUMP_SIGNAL: cannot handle the signal (%s); it will not dump", strerror(errno));
    restoreSignal(s);
  }
  static ThreadFds fds;  // the thread's argument: stable while it runs (one thread at a time)
  fds = ThreadFds{s.listenFd, s.wakeFds[0], s.dumpSignal ? s.signalFds[0] : -1};
  if (pthread_create(&s.thread, nullptr, serve, &fds) != 0) {
    WEFT_WARN("WEFT_STATUS_SERVER: cannot start its thread; weft-info status will not see this process");
    restoreSignal(s);
    closeFds(s);
    return;
  }
  s.running = true;
}

// With the lifecycle lock held, the registry's not.
void stopThread(ServerState& s) {
  if (!s.running) return;
  wakeThread(s, 's');
  pthread_join(s.thread, nullptr);
  s.running = false;
  restoreSignal(s);
  closeFds(s);
  for (int fd : s.retiredFds) close(fd);
  s.retiredFds.clear();
}

double secondsSince(int64_t thenNs, int64_t nowNs) { return std::max<int64_t>(0, nowNs - thenNs) / 1e9; }

}  // namespace

RankStatus communicatorStatus(ncclComm* comm, bool withStats, bool dump) {
  const int64_t nowNs = cycleStampToSteadyNs(cycleStamp());  // the clock the progress stamps convert to
  RankStatus st;
  st.commId = communicatorIdText(comm->exec.traceId);
  st.rank = comm->rank;
  st.nranks = comm->nranks;
  const std::vector<RankInfo>& ranks = comm->layout.ranks;
  st.host = ranks[comm->rank].hostName;
  st.pid = getpid();
  const ProgressSnapshot p = comm->exec.progress.snapshot();
  st.issued = p.issued;
  st.completed = p.completed;
  st.inFlight = p.inFlight;
  if (p.inFlight) {
    st.inFlightSequence = p.inFlightSequence;
    st.inFlightName = p.inFlightName;
    st.inFlightSeconds = secondsSince(p.inFlightStartNs, nowNs);
  }
  st.waiting = p.waiting;
  if (p.waiting) {
    st.waitSequence = p.wait.sequence;
    st.waitStep = p.wait.step;
    st.waitStepKind = p.wait.stepKind;
    st.waitPeer = p.wait.peer < comm->nranks ? p.wait.peer : -1;
    st.waitSlice = p.wait.slice;
    st.waitSlices = p.wait.slices;
    st.waitSeconds = secondsSince(p.wait.sinceNs, nowNs);
  }
  st.anyCompleted = p.anyCompleted;
  if (p.anyCompleted) {
    st.lastSequence = p.lastSequence;
    st.lastName = p.lastName;
    st.lastAgoSeconds = secondsSince(p.lastEndNs, nowNs);
    st.lastFailed = p.lastFailed;
  }
  for (const RankInfo& info : ranks) st.members.push_back(RankStatus::Member{info.rank, info.hostName, info.pid});
  if (withStats && comm->exec.metrics)
    for (const CollectiveMetrics::Totals& t : comm->exec.metrics->totals())
      st.stats.push_back(RankStatus::Stat{t.kind, t.bucket, t.count, t.bytes, t.ns});
  if (dump && comm->exec.records.enabled()) {
    st.dumpPath = recordDumpPath(comm->rank, comm->exec.traceId);
    comm->exec.dumpRequested.store(true, std::memory_order_relaxed);
  }
  return st;
}

std::string statusSocketName(int pid) { return kStatusSocketPrefix + std::to_string(pid); }

ncclResult_t statusServerListen(ncclComm* comm, const SocketAddress& where, uint16_t* port) {
  *port = 0;
  if (!settingBool(Setting::WeftStatusServer) || tlsRequested()) return ncclSuccess;
  SocketAddress address = where, bound;
  address.setPort(0);
  int fd = -1;
  WEFT_CHECK(listenSocket(address, &fd, &bound));
  setNonBlocking(fd, true);  // accept never blocks the thread
  comm->net.statusListenFd = fd;
  *port = static_cast<uint16_t>(bound.port());
  return ncclSuccess;
}

void statusServerAdd(ncclComm* comm) {
  if (!settingBool(Setting::WeftStatusServer)) return;
  ServerState& s = state();
  std::lock_guard<std::mutex> lifecycle(s.lifecycle);
  startThread(s);
  {
    std::lock_guard<std::mutex> registry(s.registry);
    s.comms.push_back(comm);
  }
  wakeThread(s, 'r');  // to poll its TCP endpoint too
}

void statusServerRemove(ncclComm* comm) {
  ServerState& s = state();
  std::lock_guard<std::mutex> lifecycle(s.lifecycle);
  bool registered = false, last = false;
  {
    std::lock_guard<std::mutex> registry(s.registry);
    const size_t before = s.comms.size();
    s.comms.erase(std::remove(s.comms.begin(), s.comms.end(), comm), s.comms.end());
    registered = before != s.comms.size();
    last = registered && s.comms.empty();
    // The thread may be polling the endpoint: it closes it itself, never under its poll.
    if (comm->net.statusListenFd >= 0 && registered && s.running) {
      s.retiredFds.push_back(comm->net.statusListenFd);
      comm->net.statusListenFd = -1;
    }
  }
  if (comm->net.statusListenFd >= 0) closeSocket(comm->net.statusListenFd);  // never served
  if (last) {
    stopThread(s);  // no thread outlives the process's last communicator
  } else if (registered) {
    // The endpoint is closed when this returns, as a destroy promises: wait for the thread
    // (busy at most one request's time-out).
    wakeThread(s, 'r');
    std::unique_lock<std::mutex> registry(s.registry);
    s.retiredClosed.wait_for(registry, std::chrono::seconds(5), [&] { return s.retiredFds.empty(); });
  }
}

// "job KIND ID": communicator ID's ranks on other hosts, asked through their TCP endpoints.
std::string answerJobRequest(const std::string& kind, const std::string& commId) {
  RemoteStatusTargets targets;
  {
    ServerState& s = state();
    std::lock_guard<std::mutex> lock(s.registry);
    ncclComm* comm = registeredCommunicator(s, commId);
    if (!comm) return "error\tno such communicator\n";
    targets = remoteStatusTargetsOf(comm);
  }
  return encodeStatus(askRemoteRanks(targets, kind, kRemoteTimeoutSeconds));  // the lock is not held meanwhile
}

std::string answerStatusRequest(const std::string& request) {
  if (request.rfind("job ", 0) == 0) {
    const size_t space = request.rfind(' ');
    return answerJobRequest(request.substr(4, space - 4), request.substr(space + 1));
  }
  const bool withStats = request == "status stats";
  const bool dump = request == "dump";
  if (request != "status" && !withStats && !dump) return "error\tunknown request\n";
  std::vector<RankStatus> answers;
  ServerState& s = state();
  {
    std::lock_guard<std::mutex> lock(s.registry);
    for (ncclComm* comm : s.comms) answers.push_back(communicatorStatus(comm, withStats, dump));
  }
  return encodeStatus(answers);
}

}  // namespace weft
