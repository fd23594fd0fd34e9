#include "topology/host_identity.h"

#include <unistd.h>

#include <fstream>

#include "common/settings.h"

namespace weft {

std::string hostIdentity() {
  if (std::optional<std::string> forced = settingString(Setting::WeftHostname); forced && !forced->empty())
    return *forced;
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) name[0] = '\0';
  std::string id = name[0] ? name : "unknown-host";
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string bootId;
  if (boot && std::getline(boot, bootId) && !bootId.empty()) id += ":" + bootId;
  return id;
}

}  // namespace weft
