#include "runtime/status/remote_status.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

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

bool knownKind(const std::string& kind) { return kind == "status" || kind == "status stats" || kind == "dump"; }

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
  if (target.address.port() == 0) return failed("it has no status endpoint (WEFT_STATUS_SERVER=0 or TLS)");
  const Deadline deadline = Deadline::after(timeoutSeconds);
  int fd = -1;
  if (connectSocket(target.address, deadline, &fd) != ncclSuccess) return failed(lastErrorMessage());
  CloseSocketOnExit closer{fd};
  Nonce nonce;
  if (recvAll(fd, &nonce, sizeof nonce, deadline) != ncclSuccess) return failed(lastErrorMessage());
  const std::string request = kind + " " + t.commId;
  const uint32_t length = static_cast<uint32_t>(request.size());
  const Mac mac = computeMac(t.key, kRequestLabel, {{nonce.bytes, sizeof nonce.bytes}, {request.data(), length}});
  if (sendAll(fd, &length, sizeof length, deadline) != ncclSuccess ||
      sendAll(fd, request.data(), length, deadline) != ncclSuccess ||
      sendAll(fd, mac.bytes, sizeof mac.bytes, deadline) != ncclSuccess)
    return failed(lastErrorMessage());
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
  if (!knownKind(kind)) return {};
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
  const std::string reply = answer(kind);
  (void)sendAll(fd, reply.data(), reply.size(), deadline);
}

}  // namespace weft
