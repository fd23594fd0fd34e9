#include "topology/topology_print.h"

#include <cstdio>
#include <string>

#include "common/json_text.h"
#include "common/units_text.h"
#include "topology/affinity.h"

namespace weft {
namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string hex4(unsigned v) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04x", v);
  return buf;
}

std::string nodeLine(const TopologyModel& m, const TopoNode& n) {
  std::string s = topoNodeTypeName(n.type);
  switch (n.type) {
    case TopoNodeType::Machine: s += m.hostName.empty() ? "" : " \"" + m.hostName + "\""; break;
    case TopoNodeType::Package: {
      s += " #" + std::to_string(n.osIndex);
      for (const PackageInfo& p : m.packageList)
        if (p.osIndex == n.osIndex) {
          s += ": " + std::to_string(p.cores) + " cores, " + std::to_string(p.pus) + " PUs, cpuset " + p.cpuset;
          if (!p.cpuModel.empty()) s += " (" + p.cpuModel + ")";
        }
      break;
    }
    case TopoNodeType::NumaNode:
      s += " #" + std::to_string(n.osIndex);
      for (const NumaInfo& i : m.numaList)
        if (i.osIndex == n.osIndex) s += ": " + bytesText(i.memoryBytes) + ", cpuset " + i.cpuset;
      break;
    case TopoNodeType::HostBridge: s += " " + n.busId; break;
    case TopoNodeType::Gpu:
      for (const GpuInfo& g : m.gpus)
        if (g.node == n.id) {
          s += " " + std::to_string(g.index) + " " + g.busId;
          if (!g.model.empty()) s += " \"" + g.model + "\"";
          if (g.nvlinkGBps > 0) s += fmt(", NVLink %.0f GB/s", g.nvlinkGBps) + (g.onNvSwitch ? " (NVSwitch)" : "");
        }
      break;
    case TopoNodeType::Nic:
      for (const NicInfo& nic : m.nics)
        if (nic.node == n.id) {
          s += " " + nic.name;
          if (!nic.busId.empty()) s += " " + nic.busId;
          if (!nic.netdev.empty() && nic.netdev != nic.name) s += " netdev " + nic.netdev;
          s += nic.speedGbps > 0 ? fmt(", %g Gb/s", nic.speedGbps) : std::string(", speed unknown");
        }
      break;
    case TopoNodeType::NvSwitch:
    case TopoNodeType::Network: break;
    default:
      s += " " + n.busId;
      if (n.pciVendor || n.pciDevice) s += " [" + hex4(n.pciVendor) + ":" + hex4(n.pciDevice) + "]";
      if (n.pciClass) s += " class " + hex4(n.pciClass);
      break;
  }
  if (n.upLinkGBps > 0) {
    s += fmt(" (link %.1f GB/s", n.upLinkGBps);
    if (n.pcieGen > 0) s += ", Gen" + std::to_string(n.pcieGen) + " x" + std::to_string(n.pcieWidth);
    s += ")";
  }
  return s;
}

void tree(const TopologyModel& m, int id, int depth, std::string* out) {
  out->append(static_cast<size_t>(depth) * 2, ' ');
  out->append(nodeLine(m, m.nodes[id]));
  out->push_back('\n');
  for (int c : m.nodes[id].children) tree(m, c, depth + 1, out);
}

}  // namespace

std::string formatTopologyTree(const TopologyModel& m) {
  std::string out = "source: " + m.source + "\n";
  out += std::to_string(m.packages) + " packages, " + std::to_string(m.numaNodes) + " NUMA nodes, " +
         std::to_string(m.cores) + " cores, " + std::to_string(m.pus) + " PUs, " + std::to_string(m.gpus.size()) +
         " GPUs, " + std::to_string(m.nics.size()) + " NICs\n";
  if (!m.caches.empty()) {
    out += "caches:";
    for (const CacheLevelInfo& c : m.caches)
      out += " L" + std::to_string(c.level) + (c.kind == 'u' ? "" : std::string(1, c.kind)) + " " +
             bytesText(c.sizeBytes) + " x" + std::to_string(c.count);
    out += "\n";
  }
  if (!m.nodes.empty()) tree(m, 0, 0, &out);
  for (const TopoNode& n : m.nodes)
    if (n.parent < 0 && n.id != 0) tree(m, n.id, 0, &out);
  for (const GpuInfo& g : m.gpus) {
    std::vector<int> near = nearestNics(m, g.index);
    out += "GPU" + std::to_string(g.index) + " nearest NIC:";
    for (int i : near) out += " " + m.nics[i].name;
    if (near.empty()) out += " none";
    out += ", NUMA " + std::to_string(g.numaNode) + ", cpuset " + g.cpuset + "\n";
  }
  return out;
}

std::string formatLinkTable(const TopologyModel& m) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-12s %10s %8s  %-26s %-26s %s\n", "type", "GB/s", "lat(us)", "from", "to",
                "detail");
  out += line;
  for (const TopoLink& l : m.links) {
    std::string bw = fmt("%.6g", l.bandwidthGBps) + (l.reported ? " " : "*");
    std::snprintf(line, sizeof line, "%-12s %10s %8s  %-26s %-26s %s\n", linkTypeName(l.type), bw.c_str(),
                  fmt("%.6g", l.latencyUs).c_str(), m.nodes[l.a].name.c_str(), m.nodes[l.b].name.c_str(),
                  l.label.c_str());
    out += line;
  }
  out += "(* nominal value from the link table: the hardware did not report one)\n";
  return out;
}

std::string topologyToJson(const TopologyModel& m) {
  std::string o = "{\n";
  o += "  \"source\": " + jsonQuote(m.source) + ",\n  \"hostName\": " + jsonQuote(m.hostName) + ",\n";
  o += "  \"packages\": " + std::to_string(m.packages) + ", \"numaNodes\": " + std::to_string(m.numaNodes) +
       ", \"cores\": " + std::to_string(m.cores) + ", \"pus\": " + std::to_string(m.pus) + ",\n";
  o += "  \"caches\": [";
  for (size_t i = 0; i < m.caches.size(); ++i) {
    const CacheLevelInfo& c = m.caches[i];
    o += std::string(i ? ", " : "") + "{\"level\": " + std::to_string(c.level) + ", \"kind\": \"" + c.kind +
         "\", \"size\": " + std::to_string(c.sizeBytes) + ", \"count\": " + std::to_string(c.count) + "}";
  }
  o += "],\n  \"numa\": [";
  for (size_t i = 0; i < m.numaList.size(); ++i) {
    const NumaInfo& n = m.numaList[i];
    o += std::string(i ? ", " : "") + "{\"os_index\": " + std::to_string(n.osIndex) +
         ", \"package\": " + std::to_string(n.package) + ", \"memory\": " + std::to_string(n.memoryBytes) +
         ", \"cpuset\": " + jsonQuote(n.cpuset) + "}";
  }
  o += "],\n  \"gpus\": [";
  for (size_t i = 0; i < m.gpus.size(); ++i) {
    const GpuInfo& g = m.gpus[i];
    o += std::string(i ? "," : "") + "\n    {\"index\": " + std::to_string(g.index) +
         ", \"busId\": " + jsonQuote(g.busId) + ", \"model\": " + jsonQuote(g.model) +
         ", \"numa\": " + std::to_string(g.numaNode) + ", \"cpuset\": " + jsonQuote(g.cpuset) +
         ", \"nvlinkGBps\": " + jsonNumber(g.nvlinkGBps) + ", \"nvswitch\": " + (g.onNvSwitch ? "true" : "false") +
         ", \"nearestNics\": [";
    std::vector<int> near = nearestNics(m, g.index);
    for (size_t k = 0; k < near.size(); ++k) o += std::string(k ? ", " : "") + jsonQuote(m.nics[near[k]].name);
    o += "]}";
  }
  o += "],\n  \"nics\": [";
  for (size_t i = 0; i < m.nics.size(); ++i) {
    const NicInfo& n = m.nics[i];
    o += std::string(i ? "," : "") + "\n    {\"name\": " + jsonQuote(n.name) + ", \"netdev\": " + jsonQuote(n.netdev) +
         ", \"verbs\": " + jsonQuote(n.verbsDevice) + ", \"busId\": " + jsonQuote(n.busId) +
         ", \"speedGbps\": " + jsonNumber(n.speedGbps) + ", \"numa\": " + std::to_string(n.numaNode) + "}";
  }
  o += "],\n  \"gpuPaths\": [";
  bool first = true;
  for (const GpuInfo& a : m.gpus)
    for (const GpuInfo& b : m.gpus) {
      if (a.index >= b.index) continue;
      o += std::string(first ? "" : ",") + "\n    {\"a\": " + std::to_string(a.index) +
           ", \"b\": " + std::to_string(b.index) + ", \"type\": \"" + pathTypeName(pathType(m, a.node, b.node)) +
           "\", \"GBps\": " + jsonNumber(pathBandwidthGBps(m, a.node, b.node)) + "}";
      first = false;
    }
  o += "],\n  \"nodes\": [";
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    const TopoNode& n = m.nodes[i];
    o += std::string(i ? "," : "") + "\n    {\"id\": " + std::to_string(n.id) + ", \"type\": \"" +
         topoNodeTypeName(n.type) + "\", \"parent\": " + std::to_string(n.parent) + ", \"name\": " + jsonQuote(n.name) +
         ", \"busId\": " + jsonQuote(n.busId) + ", \"numa\": " + std::to_string(n.numaNode) + "}";
  }
  o += "],\n  \"links\": [";
  for (size_t i = 0; i < m.links.size(); ++i) {
    const TopoLink& l = m.links[i];
    o += std::string(i ? "," : "") + "\n    {\"a\": " + std::to_string(l.a) + ", \"b\": " + std::to_string(l.b) +
         ", \"type\": \"" + linkTypeName(l.type) + "\", \"GBps\": " + jsonNumber(l.bandwidthGBps) +
         ", \"latencyUs\": " + jsonNumber(l.latencyUs) + ", \"reported\": " + (l.reported ? "true" : "false") +
         ", \"label\": " + jsonQuote(l.label) + "}";
  }
  o += "]\n}\n";
  return o;
}

}  // namespace weft
