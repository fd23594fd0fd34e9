#include "common/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

#include "common/log.h"
#include "common/settings.h"
#include "common/status.h"

namespace weft {

namespace {
constexpr int kKeepAliveIdleSeconds = 30;  // idle time before the first keepalive probe
}  // namespace

std::string SocketAddress::hostString() const {
  char host[INET6_ADDRSTRLEN] = "?";
  if (storage.ss_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, host, sizeof(host));
  else if (storage.ss_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr, host, sizeof(host));
  else
    return "<no address>";
  return host;
}

std::string SocketAddress::toString() const {
  if (storage.ss_family == AF_INET) return hostString() + ":" + std::to_string(port());
  if (storage.ss_family == AF_INET6) return "[" + hostString() + "]:" + std::to_string(port());
  return "<no address>";
}

int SocketAddress::port() const {
  if (storage.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  if (storage.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  return 0;
}

void SocketAddress::setPort(int port) {
  if (storage.ss_family == AF_INET) reinterpret_cast<sockaddr_in*>(&storage)->sin_port = htons(port);
  if (storage.ss_family == AF_INET6) reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port = htons(port);
}

bool SocketAddress::isLoopback() const {
  if (storage.ss_family == AF_INET)
    return (ntohl(reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr.s_addr) >> 24) == 127;
  if (storage.ss_family == AF_INET6)
    return IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr);
  return false;
}

bool SocketAddress::sameHostAs(const SocketAddress& other) const {
  if (storage.ss_family != other.storage.ss_family) return false;
  if (storage.ss_family == AF_INET)
    return reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr.s_addr ==
           reinterpret_cast<const sockaddr_in*>(&other.storage)->sin_addr.s_addr;
  if (storage.ss_family == AF_INET6)
    return IN6_ARE_ADDR_EQUAL(&reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr,
                              &reinterpret_cast<const sockaddr_in6*>(&other.storage)->sin6_addr);
  return false;
}

bool connectionWithinHost(const SocketAddress& local, const SocketAddress& peer) {
  return peer.isLoopback() || peer.sameHostAs(local);
}

bool connectedWithinHost(int fd) {
  SocketAddress local, peer;
  local.length = peer.length = sizeof(sockaddr_storage);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local.storage), &local.length) != 0) return false;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer.storage), &peer.length) != 0) return false;
  return connectionWithinHost(local, peer);
}

ncclResult_t parseSocketAddress(const std::string& text, const char* what, SocketAddress* out) {
  std::string host = text;
  std::string port = "0";
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos) return fail(ncclInvalidArgument, "%s: malformed address '%s'", what, text.c_str());
    host = text.substr(1, close - 1);
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':') return fail(ncclInvalidArgument, "%s: malformed address '%s'", what, text.c_str());
      port = text.substr(close + 2);
    }
  } else if (size_t colon = text.rfind(':'); colon != std::string::npos && text.find(':') == colon) {
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  char* end = nullptr;
  long portNumber = strtol(port.c_str(), &end, 10);
  if (port.empty() || *end || portNumber < 0 || portNumber > 65535)
    return fail(ncclInvalidArgument, "%s: bad port in '%s'", what, text.c_str());
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &result);
  if (rc != 0 || !result)
    return fail(ncclInvalidArgument, "%s: cannot resolve host '%s': %s", what, host.c_str(), gai_strerror(rc));
  memcpy(&out->storage, result->ai_addr, result->ai_addrlen);
  out->length = result->ai_addrlen;
  freeaddrinfo(result);
  out->setPort(static_cast<int>(portNumber));
  return ncclSuccess;
}

namespace {

struct InterfaceFilter {
  bool exclude = false;
  bool exact = false;
  std::vector<std::string> names;

  bool matches(const char* name) const {
    bool hit = false;
    for (const auto& n : names)
      if (exact ? n == name : strncmp(name, n.c_str(), n.size()) == 0) hit = true;
    return exclude ? !hit : hit;
  }
};

InterfaceFilter parseFilter(const std::string& text) {
  InterfaceFilter filter;
  size_t pos = 0;
  if (pos < text.size() && text[pos] == '^') filter.exclude = true, ++pos;
  if (pos < text.size() && text[pos] == '=') filter.exact = true, ++pos;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    if (comma > pos) filter.names.push_back(text.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return filter;
}

int familyFromEnv() {
  std::optional<std::string> family = settingString(Setting::NcclSocketFamily);
  if (family == "AF_INET") return AF_INET;
  if (family == "AF_INET6") return AF_INET6;
  return AF_UNSPEC;
}

}  // namespace

ncclResult_t findInterfaceAddresses(std::vector<NamedAddress>* out) {
  out->clear();
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return fail(ncclSystemError, "getifaddrs failed: %s", strerror(errno));
  const char* ifname = settingText(Setting::NcclSocketIfname);
  int family = familyFromEnv();
  // Without NCCL_SOCKET_IFNAME: any interface but docker and loopback, then loopback.
  std::vector<InterfaceFilter> passes;
  if (ifname && *ifname) {
    passes.push_back(parseFilter(ifname));
  } else {
    passes.push_back(parseFilter("^docker,lo,virbr,ifb"));
    passes.push_back(parseFilter("lo"));
  }
  for (const auto& filter : passes) {
    // IPv4 first, as NCCL does, unless the family is forced.
    for (int wanted : {AF_INET, AF_INET6}) {
      if (family != AF_UNSPEC && family != wanted) continue;
      for (ifaddrs* entry = list; entry; entry = entry->ifa_next) {
        if (!entry->ifa_addr || entry->ifa_addr->sa_family != wanted) continue;
        if (!(entry->ifa_flags & IFF_UP)) continue;
        if (!filter.matches(entry->ifa_name)) continue;
        if (wanted == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<sockaddr_in6*>(entry->ifa_addr)->sin6_addr))
          continue;
        // One address per interface: its first.
        if (std::any_of(out->begin(), out->end(),
                        [&](const NamedAddress& a) { return a.interfaceName == entry->ifa_name; }))
          continue;
        NamedAddress found;
        found.address.length = wanted == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
        memcpy(&found.address.storage, entry->ifa_addr, found.address.length);
        found.interfaceName = entry->ifa_name;
        out->push_back(found);
      }
      if (!out->empty()) {
        freeifaddrs(list);
        return ncclSuccess;
      }
    }
  }
  freeifaddrs(list);
  return fail(ncclSystemError, "no usable network interface matches NCCL_SOCKET_IFNAME=%s",
              ifname ? ifname : "(unset)");
}

ncclResult_t findInterfaceAddress(SocketAddress* out, std::string* interfaceName) {
  std::vector<NamedAddress> all;
  WEFT_CHECK(findInterfaceAddresses(&all));
  *out = all.front().address;
  if (interfaceName) *interfaceName = all.front().interfaceName;
  return ncclSuccess;
}

ncclResult_t listenSocket(const SocketAddress& address, int* fd, SocketAddress* bound) {
  int s = socket(address.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return fail(ncclSystemError, "socket() failed: %s", strerror(errno));
  int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(s, reinterpret_cast<const sockaddr*>(&address.storage), address.length) != 0) {
    int err = errno;
    close(s);
    return fail(ncclSystemError, "cannot bind %s: %s", address.toString().c_str(), strerror(err));
  }
  // The kernel's largest backlog (somaxconn): connections that arrive while the accept queue is
  // full are dropped and retried a second later, so strangers that filled it would delay the
  // real peers; queued, they are accepted and dropped in order ahead of them.
  if (listen(s, SOMAXCONN) != 0) {
    int err = errno;
    close(s);
    return fail(ncclSystemError, "listen on %s failed: %s", address.toString().c_str(), strerror(err));
  }
  if (bound) {
    bound->length = sizeof(bound->storage);
    getsockname(s, reinterpret_cast<sockaddr*>(&bound->storage), &bound->length);
  }
  *fd = s;
  return ncclSuccess;
}

ncclResult_t adoptListeningSocket(int fd, const SocketAddress& wanted, SocketAddress* bound) {
  int listening = 0, type = 0;
  socklen_t length = sizeof(int);
  if (fcntl(fd, F_GETFD) < 0) return fail(ncclInvalidArgument, "fd %d is not open", fd);
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) != 0 || type != SOCK_STREAM)
    return fail(ncclInvalidArgument, "fd %d is not a stream socket", fd);
  length = sizeof(int);
  if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length) != 0 || !listening)
    return fail(ncclInvalidArgument, "fd %d is not listening", fd);
  SocketAddress actual;
  actual.length = sizeof(actual.storage);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&actual.storage), &actual.length) != 0)
    return fail(ncclInvalidArgument, "fd %d: getsockname failed: %s", fd, strerror(errno));
  if (actual.storage.ss_family != wanted.storage.ss_family || actual.port() != wanted.port())
    return fail(ncclInvalidArgument, "fd %d listens on %s, not on %s", fd, actual.toString().c_str(),
                wanted.toString().c_str());
  fcntl(fd, F_SETFD, FD_CLOEXEC);  // the launcher cleared it for this process only
  if (bound) *bound = actual;
  return ncclSuccess;
}

namespace {

// Waits for a non-blocking connect() in progress; 0 when connected, else the errno (ETIMEDOUT
// at the deadline). A black-holed address would otherwise hold a blocking connect() for the
// kernel's SYN retries (about 130 s), whatever WEFT_TIMEOUT says and through an abort.
int finishConnect(int fd, const Deadline& deadline) {
  for (;;) {
    pollfd p{fd, POLLOUT, 0};
    int ready = poll(&p, 1, deadline.millisecondsLeft(100));
    if (ready > 0) {
      int err = 0;
      socklen_t length = sizeof(err);
      if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &length) != 0) return errno;
      return err;
    }
    if (ready < 0 && errno != EINTR) return errno;
    if (deadline.expired()) return ETIMEDOUT;
  }
}

}  // namespace

ncclResult_t connectSocket(const SocketAddress& address, const Deadline& deadline, int* fd) {
  int delayMs = 1;
  for (;;) {
    int s = socket(address.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s < 0) return fail(ncclSystemError, "socket() failed: %s", strerror(errno));
    int err = 0;
    if (connect(s, reinterpret_cast<const sockaddr*>(&address.storage), address.length) != 0) {
      err = errno;
      if (err == EINPROGRESS || err == EINTR) err = finishConnect(s, deadline);
    }
    if (err == 0) {
      setNonBlocking(s, false);  // callers get the blocking socket they always had
      tuneConnection(s);
      *fd = s;
      return ncclSuccess;
    }
    close(s);
    bool retry = err == ECONNREFUSED || err == ETIMEDOUT || err == EINTR || err == EAGAIN || err == ECONNRESET;
    if (!retry || deadline.expired())
      return fail(ncclRemoteError, "cannot connect to %s: %s%s", address.toString().c_str(), strerror(err),
                  retry ? " (gave up at the WEFT_TIMEOUT deadline)" : "");
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(delayMs, deadline.millisecondsLeft(delayMs))));
    delayMs = delayMs < 100 ? delayMs * 2 : 100;
  }
}

ncclResult_t acceptSocket(int listenFd, const Deadline& deadline, int* fd, SocketAddress* peer) {
  for (;;) {
    pollfd p{listenFd, POLLIN, 0};
    int ready = poll(&p, 1, deadline.millisecondsLeft(100));
    if (ready > 0) {
      SocketAddress from;
      from.length = sizeof(from.storage);
      int s = accept4(listenFd, reinterpret_cast<sockaddr*>(&from.storage), &from.length, SOCK_CLOEXEC);
      if (s >= 0) {
        tuneConnection(s);
        *fd = s;
        if (peer) *peer = from;
        return ncclSuccess;
      }
      if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
        return fail(ncclSystemError, "accept failed: %s", strerror(errno));
    }
    if (deadline.expired()) return fail(ncclRemoteError, "timed out waiting for a connection (WEFT_TIMEOUT)");
  }
}

ncclResult_t sendAll(int fd, const void* data, size_t bytes, const Deadline& deadline) {
  auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = send(fd, p, bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      bytes -= n;
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      return fail(ncclRemoteError, "send failed: %s (peer gone?)", strerror(errno));
    pollfd pfd{fd, POLLOUT, 0};
    poll(&pfd, 1, deadline.millisecondsLeft(100));
    if (deadline.expired()) return fail(ncclRemoteError, "send timed out (WEFT_TIMEOUT)");
  }
  return ncclSuccess;
}

ncclResult_t recvAll(int fd, void* data, size_t bytes, const Deadline& deadline) {
  auto* p = static_cast<char*>(data);
  while (bytes > 0) {
    ssize_t n = recv(fd, p, bytes, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      bytes -= n;
      continue;
    }
    if (n == 0) return fail(ncclRemoteError, "connection closed by peer");
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      return fail(ncclRemoteError, "receive failed: %s", strerror(errno));
    pollfd pfd{fd, POLLIN, 0};
    poll(&pfd, 1, deadline.millisecondsLeft(100));
    if (deadline.expired()) return fail(ncclRemoteError, "receive timed out (WEFT_TIMEOUT)");
  }
  return ncclSuccess;
}

StreamIo sendSome(int fd, const void* data, size_t bytes, size_t* moved) {
  ssize_t n = send(fd, data, bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
  *moved = n > 0 ? static_cast<size_t>(n) : 0;
  if (n >= 0) return StreamIo::Moved;
  return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? StreamIo::WouldBlock : StreamIo::Failed;
}

StreamIo sendSomeOfTwo(int fd, const void* first, size_t firstBytes, const void* second, size_t secondBytes,
                       size_t* moved) {
  iovec parts[2] = {{const_cast<void*>(first), firstBytes}, {const_cast<void*>(second), secondBytes}};
  msghdr message{};
  message.msg_iov = firstBytes ? parts : parts + 1;
  message.msg_iovlen = firstBytes ? 2 : 1;
  ssize_t n = sendmsg(fd, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
  *moved = n > 0 ? static_cast<size_t>(n) : 0;
  if (n >= 0) return StreamIo::Moved;
  return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? StreamIo::WouldBlock : StreamIo::Failed;
}

StreamIo recvSome(int fd, void* data, size_t bytes, size_t* moved) {
  ssize_t n = recv(fd, data, bytes, MSG_DONTWAIT);
  *moved = n > 0 ? static_cast<size_t>(n) : 0;
  if (n > 0) return StreamIo::Moved;
  if (n == 0) return StreamIo::Closed;
  return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? StreamIo::WouldBlock : StreamIo::Failed;
}

socklen_t abstractUnixAddress(const std::string& name, sockaddr_un* address) {
  std::memset(address, 0, sizeof *address);
  address->sun_family = AF_UNIX;
  const size_t length = std::min(name.size(), sizeof address->sun_path - 1);
  std::memcpy(address->sun_path + 1, name.data(), length);  // sun_path[0] == 0: the abstract namespace
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + length);
}

std::optional<uid_t> socketPeerUid(int fd) {
  ucred credentials{};
  socklen_t length = sizeof credentials;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return std::nullopt;
  return credentials.uid;
}

void setNonBlocking(int fd, bool nonBlocking) {
  int flags = fcntl(fd, F_GETFL, 0);
  fcntl(fd, F_SETFL, nonBlocking ? flags | O_NONBLOCK : flags & ~O_NONBLOCK);
}

void setNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

void tuneConnection(int fd) {
  setNoDelay(fd);
  // A peer host that vanishes (power, cable, firewall) sends no FIN or RST: keepalive finds it
  // on an idle connection and TCP_USER_TIMEOUT bounds how long sent data may stay unacknowledged,
  // both within WEFT_TIMEOUT, so that the error reaches the waiter instead of a silent stall.
  // A silent peer is found after idle + probes * interval, at most half of WEFT_TIMEOUT.
  const double timeout = settingDouble(Setting::WeftTimeout);
  const int idle = static_cast<int>(std::clamp(timeout / 4, 1.0, static_cast<double>(kKeepAliveIdleSeconds)));
  const int interval = std::max(1, idle / 3);
  const int probes = 3;
  const int userTimeout = static_cast<int>(std::clamp(timeout * 1000, 1000.0, double{std::numeric_limits<int>::max()}));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof(probes));
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &userTimeout, sizeof(userTimeout));
}

void closeSocket(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

}  // namespace weft
