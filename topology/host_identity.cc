#include "topology/host_identity.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "common/settings.h"

namespace weft {

namespace {

// The inode of one of this process's namespaces (0 when it cannot be read).
unsigned long namespaceInode(const char* kind) {
  struct stat info {};
  return stat((std::string("/proc/self/ns/") + kind).c_str(), &info) == 0 ? static_cast<unsigned long>(info.st_ino) : 0;
}

}  // namespace

std::string hostIdentity() {
  if (std::optional<std::string> forced = settingString(Setting::WeftHostname); forced && !forced->empty())
    return *forced;
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) name[0] = '\0';
  std::string id = name[0] ? name : "unknown-host";
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string bootId;
  if (boot && std::getline(boot, bootId) && !bootId.empty()) id += ":" + bootId;
  // Containers on one machine share the boot id (and, with host networking, the hostname).
  // Shared memory between ranks needs one PID namespace (peer liveness), one IPC namespace and
  // one network namespace (the fd broker's abstract socket); ranks that differ in any are
  // different hosts to weft, and talk over the network.
  id += ":ns=" + std::to_string(namespaceInode("pid")) + "." + std::to_string(namespaceInode("ipc")) + "." +
        std::to_string(namespaceInode("net"));
  return id;
}

}  // namespace weft
