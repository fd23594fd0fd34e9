#include "tools/launcher/launch_env.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

extern char** environ;

namespace weft::launcher {

RendezvousSocket openRendezvousSocket(const std::string& address, std::string* error) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (inet_pton(AF_INET, address.c_str(), &addr.sin_addr) != 1) {
    if (error) *error = "not an IPv4 address: " + address;
    return {};
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    if (error) *error = std::string("socket: ") + std::strerror(errno);
    return {};
  }
  socklen_t len = sizeof(addr);
  // As the root's own listeners: the connections it accepts inherit the flag, so their TIME_WAIT
  // does not keep a later root of rank 0 (NCCL_COMM_ID names the same port again, e.g. for a
  // split) from binding the port.
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  // The root's own listeners take a backlog of 1024 too: every rank may connect at once.
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 1024) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (error) *error = std::string("bind/listen on ") + address + ": " + std::strerror(errno);
    close(fd);
    return {};
  }
  return {fd, ntohs(addr.sin_port)};
}

std::string randomSecretHex(std::string* error) {
  unsigned char bytes[16];
  size_t got = 0;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    while (got < sizeof(bytes)) {
      ssize_t n = read(fd, bytes + got, sizeof(bytes) - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    close(fd);
  }
  while (got < sizeof(bytes)) {  // no /dev/urandom (e.g. a bare chroot): ask the kernel directly
    ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (error) *error = std::string("cannot read random bytes: ") + std::strerror(errno);
      return {};
    }
    got += static_cast<size_t>(n);
  }
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char b : bytes) {
    hex += kHex[b >> 4];
    hex += kHex[b & 15];
  }
  return hex;
}

std::vector<std::string> rankEnvironment(const std::vector<std::string>& base, const JobEnv& job, int rank) {
  const std::map<std::string, std::string> set = {
      {"RANK", std::to_string(rank)},       {"WORLD_SIZE", std::to_string(job.worldSize)},
      {"LOCAL_RANK", std::to_string(rank)}, {"LOCAL_WORLD_SIZE", std::to_string(job.worldSize)},
      {"MASTER_ADDR", job.masterAddr},      {"MASTER_PORT", std::to_string(job.port)},
      {"WEFT_SECRET", job.secret},
  };
  std::vector<std::string> env;
  env.reserve(base.size() + set.size() + 1);
  for (const std::string& entry : base) {
    std::string name = entry.substr(0, entry.find('='));
    if (set.count(name) == 0 && name != "WEFT_BOOTSTRAP_FD") env.push_back(entry);
  }
  for (const auto& [name, value] : set) env.push_back(name + "=" + value);
  if (rank == 0 && job.bootstrapFd >= 0) env.push_back("WEFT_BOOTSTRAP_FD=" + std::to_string(job.bootstrapFd));
  return env;
}

std::vector<std::string> currentEnvironment() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  return env;
}

}  // namespace weft::launcher
