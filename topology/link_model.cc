#include "topology/link_model.h"

namespace weft {
namespace {

// Nominal values. Sources: PCIe base specs (per lane after 8b/10b or 128b/130b encoding);
// NVLink 4 (H100: 18 links x 25 GB/s = 450 GB/s per direction); UPI 2.0 at 16 GT/s is
// ~32 GB/s per link, three links per socket pair on Sapphire Rapids; NCCL uses lower
// effective figures for the inter-socket hop, so the default is conservative. Latencies are
// typical one-way figures for a small message over that hop. Loopback has no nominal figure:
// its default is what one TCP stream between two ranks of the 2-vCPU VM of docs/performance.md
// measured (8-byte exchange about 8 us one way, 1-8 MiB at 2-3 GB/s a direction); a tuning
// file's `link Loopback` replaces it.
constexpr LinkClassInfo kLinkTable[] = {
    {LinkType::NVLink, "NVLink", 450.0, 0.7},    {LinkType::PCIe, "PCIe", 24.0, 1.0},
    {LinkType::PCIeRoot, "PCIeRoot", 64.0, 0.5}, {LinkType::InterSocket, "InterSocket", 40.0, 0.3},
    {LinkType::Memory, "Memory", 100.0, 0.1},    {LinkType::Network, "Network", 12.5, 2.0},
    {LinkType::Loopback, "Loopback", 2.5, 8.0},
};
static_assert(sizeof(kLinkTable) / sizeof(kLinkTable[0]) == static_cast<int>(LinkType::Count));

}  // namespace

const LinkClassInfo& linkClassInfo(LinkType type) {
  int i = static_cast<int>(type);
  if (i < 0 || i >= static_cast<int>(LinkType::Count)) i = static_cast<int>(LinkType::PCIe);
  return kLinkTable[i];
}

const char* linkTypeName(LinkType type) { return linkClassInfo(type).name; }

bool parseLinkType(std::string_view name, LinkType* type) {
  for (const LinkClassInfo& info : kLinkTable) {
    if (name == info.name) {
      *type = info.type;
      return true;
    }
  }
  return false;
}

double pcieLaneGBps(int generation) {
  switch (generation) {
    case 1: return 0.25;
    case 2: return 0.5;
    case 3: return 0.985;
    case 4: return 1.969;
    case 5: return 3.938;
    case 6: return 7.877;
    default: return 0.0;
  }
}

double nvlinkPerLinkGBps(int generation) {
  switch (generation) {
    case 1: return 20.0;
    case 2: return 25.0;
    case 3: return 25.0;
    case 4: return 25.0;
    case 5: return 50.0;
    default: return 0.0;
  }
}

}  // namespace weft
