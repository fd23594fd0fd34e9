#include "transport/ibverbs/ib_device_filter.h"

#include <cstdlib>

#include "common/status.h"

namespace weft {

ncclResult_t IbDeviceFilter::parse(const std::string& text, IbDeviceFilter* out) {
  *out = IbDeviceFilter{};
  size_t at = 0;
  if (at < text.size() && text[at] == '^') {
    out->exclude_ = true;
    ++at;
  }
  if (at < text.size() && text[at] == '=') {
    out->exact_ = true;
    ++at;
  }
  while (at < text.size()) {
    size_t end = text.find(',', at);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(at, end - at);
    at = end + 1;
    if (item.empty()) continue;
    Entry entry;
    const size_t colon = item.find(':');
    entry.name = item.substr(0, colon);
    if (colon != std::string::npos) {
      const std::string port = item.substr(colon + 1);
      char* rest = nullptr;
      const long value = strtol(port.c_str(), &rest, 10);
      if (port.empty() || *rest != '\0' || value < 1 || value > 255)
        return fail(ncclInvalidArgument, "NCCL_IB_HCA=%s: \"%s\" is not a port number (1-255) in \"%s\"", text.c_str(),
                    port.c_str(), item.c_str());
      entry.port = static_cast<int>(value);
    }
    out->entries_.push_back(entry);
  }
  return ncclSuccess;
}

bool IbDeviceFilter::allows(const std::string& device, int port) const {
  if (entries_.empty()) return true;
  bool listed = false;
  for (const Entry& entry : entries_) {
    const bool nameMatches = exact_ ? device == entry.name : device.compare(0, entry.name.size(), entry.name) == 0;
    if (nameMatches && (entry.port < 0 || entry.port == port)) listed = true;
  }
  return listed != exclude_;
}

}  // namespace weft
