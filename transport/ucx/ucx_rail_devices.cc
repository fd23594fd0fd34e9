#include "transport/ucx/ucx_rail_devices.h"

#include <algorithm>
#include <filesystem>
#include <vector>

namespace weft {

namespace {
// The entries of `dir` in name order, none if it does not exist.
std::vector<std::string> entriesOf(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  std::error_code error;
  for (std::filesystem::directory_iterator it(dir, error), end; !error && it != end; it.increment(error))
    names.push_back(it->path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}
}  // namespace

std::string ucxDevicesOfNic(const std::string& interfaceName, const std::string& sysfs) {
  std::string devices = interfaceName;
  const std::filesystem::path root(sysfs);
  for (const std::string& verbs : entriesOf(root / "class/net" / interfaceName / "device/infiniband"))
    for (const std::string& port : entriesOf(root / "class/infiniband" / verbs / "ports"))
      devices += "," + verbs + ":" + port;
  return devices;
}

}  // namespace weft
