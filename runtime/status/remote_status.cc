#include "runtime/status/remote_status.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "common/deadline.h"
#include "common/status.h"
#include "runtime/comm/communicator.h"
#include "runtime/exec/collective_record.h"

namespace weft {

namespace {

constexpr std::string_view kRequestLabel = "weft status request";
constexpr uint32_t kMaxRequest = 64;
constexpr size_t kMaxReply = 16 << 20;

bool knownKind(const std::string& kind) {
  return kind == "status" || kind == "status stats" || kind == "dump" || kind == "time";
}

int64_t wallNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Reads until the peer closes, within the deadline; "" or why not.
std::string readToEnd(int fd, const Deadline& deadline, std::string* out) {
  char buffer[65536];
  for (;;) {
    ssize_t n = recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n > 0) {
      out->append(buffer, static_cast<size_t>(n));
      if (out->size() > kMaxReply) return "the answer is too long";
      continue;
    }
    if (n == 0) return "";
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      return std::string("the answer broke off: ") + strerror(errno);
    if (deadline.expired()) return "no whole answer in time";
    pollfd p{fd, POLLIN, 0};
    poll(&p, 1, deadline.millisecondsLeft(100));
  }
}

// Connects to `target`, takes its nonce and sends the signed request: "" or why not. *sentNs:
// the wall clock just before the request went (the time probe's start).
std::string sendRequest(const RemoteStatusTargets& t, const RemoteStatusTargets::Target& target,
                        const std::string& kind, const Deadline& deadline, int* fd, int64_t* sentNs = nullptr) {
  if (target.address.port() == 0) return "it has no status endpoint (WEFT_STATUS_SERVER=0 or TLS)";
  if (connectSocket(target.address, deadline, fd) != ncclSuccess) return lastErrorMessage();
  Nonce nonce;
  if (recvAll(*fd, &nonce, sizeof nonce, deadline) != ncclSuccess) return lastErrorMessage();
  const std::string request = kind + " " + t.commId;
  const uint32_t length = static_cast<uint32_t>(request.size());
  const Mac mac = computeMac(t.key, kRequestLabel, {{nonce.bytes, sizeof nonce.bytes}, {request.data(), length}});
  // One send: the time probe's round trip is then one message each way.
  std::string message(reinterpret_cast<const char*>(&length), sizeof length);
  message += request;
  message.append(reinterpret_cast<const char*>(mac.bytes), sizeof mac.bytes);
  if (sentNs) *sentNs = wallNowNs();
  if (sendAll(*fd, message.data(), message.size(), deadline) != ncclSuccess) return lastErrorMessage();
  return "";
}

// One target: its status, or an unreached entry saying why not.
RankStatus askOne(const RemoteStatusTargets& t, const RemoteStatusTargets::Target& target, const std::string& kind,
                  double timeoutSeconds) {
  RankStatus unreached;
  unreached.commId = t.commId;
  unreached.rank = target.rank;
  unreached.nranks = t.nranks;
  auto failed = [&](const std::string& why) {
    unreached.unreachedReason = "on host " + shortHostName(target.host) + ", did not answer across hosts: " + why;
    return unreached;
  };
  const Deadline deadline = Deadline::after(timeoutSeconds);
  int fd = -1;
  CloseSocketOnExit closer{fd};
  if (const std::string why = sendRequest(t, target, kind, deadline, &fd); !why.empty()) return failed(why);
  std::string reply;
  if (const std::string why = readToEnd(fd, deadline, &reply); !why.empty()) return failed(why);
  std::vector<RankStatus> answers;
  std::string error;
  if (!decodeStatus(reply, &answers, &error)) return failed(reply.empty() ? "the request was refused" : error);
  for (RankStatus& a : answers)
    if (a.commId == t.commId && a.rank == target.rank && a.unreachedReason.empty()) return a;
  return failed("it does not know the communicator");
}

}  // namespace

MacKey statusRequestKey(ncclComm* comm) { return comm->net.handshake->derivedKey("weft status request key"); }

RemoteStatusTargets remoteStatusTargetsOf(ncclComm* comm) {
  RemoteStatusTargets t;
  t.commId = communicatorIdText(comm->exec.traceId);
  t.nranks = comm->nranks;
  t.key = statusRequestKey(comm);
  const std::vector<RankInfo>& ranks = comm->layout.ranks;
  const std::string myHost = ranks[comm->rank].hostName;
  for (const RankInfo& info : ranks) {
    if (myHost == info.hostName) continue;
    RemoteStatusTargets::Target target{info.rank, info.hostName, info.pid, {}};
    if (info.dataAddressLength > 0 && info.dataAddressLength <= sizeof(target.address.storage)) {
      std::memcpy(&target.address.storage, &info.dataAddress, info.dataAddressLength);
      target.address.length = info.dataAddressLength;
      target.address.setPort(info.statusPort);
    }
    t.targets.push_back(std::move(target));
  }
  return t;
}

std::vector<RankStatus> askRemoteRanks(const RemoteStatusTargets& targets, const std::string& kind,
                                       double timeoutSeconds) {
  std::vector<RankStatus> answers(targets.targets.size());
  if (!knownKind(kind) || kind == "time") return {};  // time: clockOffsetToRankZero
  // A thread per target, a bounded number at a time: a query is rare and each waits mostly.
  constexpr size_t kAtOnce = 64;
  for (size_t first = 0; first < answers.size(); first += kAtOnce) {
    std::vector<std::thread> threads;
    for (size_t i = first; i < std::min(answers.size(), first + kAtOnce); ++i)
      threads.emplace_back([&, i] { answers[i] = askOne(targets, targets.targets[i], kind, timeoutSeconds); });
    for (std::thread& thread : threads) thread.join();
  }
  return answers;
}

int64_t clockOffsetToRankZero(ncclComm* comm, int probes, int64_t* roundTripNs) {
  *roundTripNs = 0;
  const RemoteStatusTargets t = remoteStatusTargetsOf(comm);
  const auto zero = std::find_if(t.targets.begin(), t.targets.end(), [](const auto& x) { return x.rank == 0; });
  if (zero == t.targets.end()) return 0;  // rank 0 is on this host: one clock
  int64_t best = -1, offset = 0;
  for (int probe = 0; probe < probes; ++probe) {
    const Deadline deadline = Deadline::after(1.0);
    int fd = -1;
    CloseSocketOnExit closer{fd};
    int64_t sentNs = 0;
    std::string reply;
    if (!sendRequest(t, *zero, "time", deadline, &fd, &sentNs).empty() || !readToEnd(fd, deadline, &reply).empty())
      continue;
    const int64_t receivedNs = wallNowNs();
    char* end = nullptr;
    const long long theirs = std::strtoll(reply.c_str(), &end, 10);
    if (end == reply.c_str() || *end != '\n') continue;
    const int64_t roundTrip = receivedNs - sentNs;
    if (best < 0 || roundTrip < best) {
      best = roundTrip;
      offset = theirs - (sentNs + roundTrip / 2);
    }
  }
  *roundTripNs = std::max<int64_t>(best, 0);
  return offset;
}

void serveRemoteRequest(int fd, const MacKey& key, const std::string& commId, double timeoutSeconds,
                        const std::function<std::string(const std::string& kind)>& answer) {
  const Deadline deadline = Deadline::after(timeoutSeconds);
  Nonce nonce;
  if (randomNonce(&nonce) != ncclSuccess || sendAll(fd, &nonce, sizeof nonce, deadline) != ncclSuccess) return;
  uint32_t length = 0;
  if (recvAll(fd, &length, sizeof length, deadline) != ncclSuccess || length == 0 || length > kMaxRequest) return;
  std::string request(length, '\0');
  Mac mac;
  if (recvAll(fd, request.data(), length, deadline) != ncclSuccess ||
      recvAll(fd, mac.bytes, sizeof mac.bytes, deadline) != ncclSuccess)
    return;
  if (!macsEqual(mac, computeMac(key, kRequestLabel, {{nonce.bytes, sizeof nonce.bytes}, {request.data(), length}})))
    return;  // not one of the communicator's ranks
  const size_t space = request.rfind(' ');
  if (space == std::string::npos || request.substr(space + 1) != commId) return;
  const std::string kind = request.substr(0, space);
  if (!knownKind(kind)) return;
  const std::string reply = kind == "time" ? std::to_string(wallNowNs()) + "\n" : answer(kind);
  (void)sendAll(fd, reply.data(), reply.size(), deadline);
}

}  // namespace weft
