#include "transport/tcp/tcp_congestion.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "common/log.h"
#include "common/settings.h"
#include "common/socket.h"
#include "common/status.h"

namespace weft {

namespace {

constexpr char kWithinHost[] = "reno";  // built into every kernel, allowed to every user
constexpr size_t kNameBytes = 16;       // TCP_CA_NAME_MAX (linux/tcp.h)

std::string currentCongestionControl(int fd) {
  char name[kNameBytes] = {};
  socklen_t length = sizeof(name);
  if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &length) != 0) return "?";
  return std::string(name, strnlen(name, sizeof(name)));
}

}  // namespace

ncclResult_t applyCongestionControl(int fd, int peerRank) {
  const std::string setting = settingString(Setting::WeftTcpCongestion).value_or("auto");
  if (setting == "system") return ncclSuccess;
  const bool automatic = setting == "auto";
  if (automatic && !connectedWithinHost(fd)) return ncclSuccess;
  const std::string wanted = automatic ? kWithinHost : setting;
  const std::string before = currentCongestionControl(fd);
  if (before == wanted) return ncclSuccess;
  if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, wanted.data(), static_cast<socklen_t>(wanted.size())) != 0) {
    const int error = errno;
    if (automatic) {  // the system's choice still works; this is only slower
      WEFT_INFO(kLogNet, "tcp: rank %d is on this host; congestion control stays %s (%s refused: %s)", peerRank,
                before.c_str(), wanted.c_str(), strerror(error));
      return ncclSuccess;
    }
    return fail(ncclInvalidArgument,
                "WEFT_TCP_CONGESTION=%s: the kernel refused it for the connection to rank %d: %s (see "
                "/proc/sys/net/ipv4/tcp_available_congestion_control, and tcp_allowed_congestion_control for "
                "users without CAP_NET_ADMIN)",
                setting.c_str(), peerRank, strerror(error));
  }
  WEFT_INFO(kLogNet, "tcp: connection to rank %d uses congestion control %s instead of %s%s", peerRank, wanted.c_str(),
            before.c_str(), automatic ? " (a peer on this host: nothing to pace for)" : "");
  return ncclSuccess;
}

}  // namespace weft
