#include "runtime/status/status_client.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "common/deadline.h"
#include "common/socket.h"
#include "runtime/status/status_server.h"
#include "transport/peer_process.h"

namespace weft {

namespace {

constexpr size_t kMaxReply = 16 << 20;  // a process with thousands of communicators, with statistics

struct Asking {
  int fd = -1;
  std::string request;  // what is left to send
  std::string reply;
  bool done = false;
};

}  // namespace

std::vector<int> findStatusServers() {
  std::ifstream table("/proc/net/unix");
  std::string line;
  const std::string marker = std::string("@") + kStatusSocketPrefix;
  std::vector<int> pids;
  while (std::getline(table, line)) {
    const size_t at = line.find(marker);
    if (at == std::string::npos) continue;
    const std::string digits = line.substr(at + marker.size());
    char* end = nullptr;
    const long pid = std::strtol(digits.c_str(), &end, 10);
    if (end != digits.c_str() && *end == 0 && pid > 0) pids.push_back(static_cast<int>(pid));
  }
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  return pids;
}

std::vector<StatusReply> askStatusServers(const std::vector<int>& pids, const std::string& request,
                                          double timeoutSeconds) {
  std::vector<StatusReply> replies(pids.size());
  std::vector<Asking> asking(pids.size());
  for (size_t i = 0; i < pids.size(); ++i) {
    replies[i].pid = pids[i];
    Asking& a = asking[i];
    a.request = request + "\n";
    a.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_un address;
    const socklen_t length = abstractUnixAddress(statusSocketName(pids[i]), &address);
    if (a.fd < 0 || connect(a.fd, reinterpret_cast<const sockaddr*>(&address), length) != 0) {
      replies[i].error = std::string("cannot connect: ") + strerror(errno);
      a.done = true;
    }
  }
  const Deadline deadline = Deadline::after(timeoutSeconds);
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<size_t> which;
    for (size_t i = 0; i < asking.size(); ++i) {
      if (asking[i].done) continue;
      fds.push_back({asking[i].fd, static_cast<short>(asking[i].request.empty() ? POLLIN : POLLOUT), 0});
      which.push_back(i);
    }
    if (fds.empty()) break;
    if (deadline.expired()) break;
    if (poll(fds.data(), fds.size(), deadline.millisecondsLeft()) < 0 && errno != EINTR) break;
    for (size_t k = 0; k < fds.size(); ++k) {
      if (!fds[k].revents) continue;
      Asking& a = asking[which[k]];
      if (!a.request.empty()) {
        ssize_t n = send(a.fd, a.request.data(), a.request.size(), MSG_NOSIGNAL);
        if (n > 0) a.request.erase(0, static_cast<size_t>(n));
        if (n < 0 && errno != EAGAIN) {
          replies[which[k]].error = std::string("cannot send: ") + strerror(errno);
          a.done = true;
        }
        continue;
      }
      char buffer[65536];
      ssize_t n = recv(a.fd, buffer, sizeof buffer, 0);
      if (n > 0) {
        a.reply.append(buffer, static_cast<size_t>(n));
        if (a.reply.size() > kMaxReply) {
          replies[which[k]].error = "the reply is too long";
          a.done = true;
        }
      } else if (n == 0 || errno != EAGAIN) {
        a.done = true;
        StatusReply& r = replies[which[k]];
        r.answered = n == 0 && decodeStatus(a.reply, &r.communicators, &r.error);
        if (n < 0) r.error = std::string("cannot receive: ") + strerror(errno);
      }
    }
  }
  for (size_t i = 0; i < asking.size(); ++i) {
    if (!asking[i].done && replies[i].error.empty()) {
      char text[64];
      std::snprintf(text, sizeof text, "no answer within %.1f s", timeoutSeconds);
      replies[i].error = text;
    }
    if (asking[i].fd >= 0) close(asking[i].fd);
  }
  return replies;
}

std::set<std::string> answeringHosts(const std::vector<StatusReply>& replies) {
  std::set<std::string> hosts;
  for (const StatusReply& r : replies)
    for (const RankStatus& c : r.communicators) hosts.insert(c.host);
  return hosts;
}

void explainSilentRanks(const std::vector<StatusReply>& replies, const std::set<std::string>& localHosts,
                        CommunicatorView* view) {
  for (int rank = 0; rank < view->nranks; ++rank) {
    if (view->ranks[rank]) continue;
    const RankStatus::Member& m = view->members[rank];
    if (!localHosts.count(m.host)) {
      if (view->silence[rank].empty()) {  // else: asked across hosts, with no answer
        view->unasked[rank] = true;
        view->silence[rank] = "on another host (host " + shortHostName(m.host) + "); not asked";
      }
      continue;
    }
    if (processGone(m.pid)) {
      view->dead[rank] = true;
      view->silence[rank] = "its process is gone";
      continue;
    }
    view->silence[rank] = "is alive but did not answer";
    for (const StatusReply& r : replies)
      if (r.pid == m.pid && !r.error.empty()) view->silence[rank] += " (" + r.error + ")";
  }
}

bool processGone(int pid) { return PeerProcess::byPid(pid).exited(); }

}  // namespace weft
