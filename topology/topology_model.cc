#include "topology/topology_model.h"

#include <cctype>
#include <cstdio>

namespace weft {

const char* topoNodeTypeName(TopoNodeType type) {
  switch (type) {
    case TopoNodeType::Machine: return "Machine";
    case TopoNodeType::Package: return "Package";
    case TopoNodeType::NumaNode: return "NUMANode";
    case TopoNodeType::HostBridge: return "HostBridge";
    case TopoNodeType::PciBridge: return "PCIBridge";
    case TopoNodeType::PciDevice: return "PCIDevice";
    case TopoNodeType::Gpu: return "GPU";
    case TopoNodeType::Nic: return "NIC";
    case TopoNodeType::NvSwitch: return "NVSwitch";
    case TopoNodeType::Network: return "Network";
  }
  return "?";
}

const GpuInfo* TopologyModel::gpuByIndex(int index) const {
  for (const GpuInfo& g : gpus)
    if (g.index == index) return &g;
  return nullptr;
}

const GpuInfo* TopologyModel::gpuByBusId(const std::string& busId) const {
  std::string want = normalizeBusId(busId);
  if (want.empty()) return nullptr;
  for (const GpuInfo& g : gpus)
    if (g.busId == want) return &g;
  return nullptr;
}

const NicInfo* TopologyModel::nicByName(const std::string& name) const {
  for (const NicInfo& n : nics)
    if (n.name == name || (!n.netdev.empty() && n.netdev == name) || (!n.verbsDevice.empty() && n.verbsDevice == name))
      return &n;
  return nullptr;
}

std::vector<const TopoLink*> TopologyModel::linksOf(int node) const {
  std::vector<const TopoLink*> out;
  for (const TopoLink& l : links)
    if (l.a == node || l.b == node) out.push_back(&l);
  return out;
}

std::string normalizeBusId(const std::string& busId) {
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  char tail = 0;
  if (std::sscanf(busId.c_str(), "%x:%x:%x.%x%c", &domain, &bus, &dev, &fn, &tail) == 4) {
  } else if (std::sscanf(busId.c_str(), "%x:%x.%x%c", &bus, &dev, &fn, &tail) == 3) {
    domain = 0;
  } else {
    return "";
  }
  if (domain > 0xffff || bus > 0xff || dev > 0x1f || fn > 7) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", domain, bus, dev, fn);
  return buf;
}

}  // namespace weft
