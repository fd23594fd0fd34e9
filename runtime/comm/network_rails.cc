#include "runtime/comm/network_rails.h"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace weft {

bool railNameBefore(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (isdigit(static_cast<unsigned char>(a[i])) && isdigit(static_cast<unsigned char>(b[j]))) {
      size_t ei = i, ej = j;
      while (ei < a.size() && isdigit(static_cast<unsigned char>(a[ei]))) ++ei;
      while (ej < b.size() && isdigit(static_cast<unsigned char>(b[ej]))) ++ej;
      const std::string na = a.substr(i, ei - i), nb = b.substr(j, ej - j);
      if (na.size() != nb.size()) return na.size() < nb.size();  // no leading zeros in NIC names
      if (na != nb) return na < nb;
      i = ei, j = ej;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i, ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

std::vector<NamedAddress> railsAmong(std::vector<NamedAddress> interfaces) {
  if (interfaces.size() < 2) return {};
  // Rail k must be the same NIC on every host: name order, numbers by value (eth2 < eth10), not
  // the order the system lists them in.
  std::sort(interfaces.begin(), interfaces.end(), [](const NamedAddress& a, const NamedAddress& b) {
    return railNameBefore(a.interfaceName, b.interfaceName);
  });
  if (interfaces.size() > kMaxRails) interfaces.resize(kMaxRails);
  return interfaces;
}

void publishRails(const std::vector<SocketAddress>& bound, RankInfo* info) {
  info->railCount = static_cast<uint32_t>(std::min<size_t>(bound.size(), kMaxRails));
  for (uint32_t i = 0; i < info->railCount; ++i) {
    info->railAddressLengths[i] = bound[i].length;
    memcpy(&info->railAddresses[i], &bound[i].storage, sizeof(info->railAddresses[i]));
  }
}

SocketAddress joinAddressOf(const RankInfo& peer, int peerLocalRank, int* rail) {
  SocketAddress address;
  const uint32_t rails = std::min(peer.railCount, kMaxRails);
  if (rails == 0 || peerLocalRank < 0) {
    *rail = -1;
    address.length = peer.dataAddressLength;
    memcpy(&address.storage, &peer.dataAddress, sizeof(address.storage));
    return address;
  }
  *rail = static_cast<int>(static_cast<uint32_t>(peerLocalRank) % rails);
  address.length = peer.railAddressLengths[*rail];
  memcpy(&address.storage, &peer.railAddresses[*rail], sizeof(address.storage));
  return address;
}

std::string describeRails(const std::vector<NamedAddress>& rails) {
  std::string text;
  for (const NamedAddress& rail : rails)
    text += (text.empty() ? "" : ", ") + rail.interfaceName + " " + rail.address.hostString();
  return text;
}

}  // namespace weft
