#include "topology/affinity.h"

#include <hwloc.h>

#include <algorithm>

namespace weft {
namespace {

bool inTree(const TopologyModel& m, int node) {
  if (node < 0 || node >= static_cast<int>(m.nodes.size())) return false;
  while (m.nodes[node].parent >= 0) node = m.nodes[node].parent;
  return node == 0;
}

std::vector<int> ancestors(const TopologyModel& m, int node) {  // node first, machine last
  std::vector<int> out;
  for (; node >= 0; node = m.nodes[node].parent) out.push_back(node);
  return out;
}

const TopoLink* findLink(const TopologyModel& m, int a, int b, LinkType type) {
  for (const TopoLink& l : m.links)
    if (l.type == type && ((l.a == a && l.b == b) || (l.a == b && l.b == a))) return &l;
  return nullptr;
}

}  // namespace

const char* pathTypeName(PathType type) {
  switch (type) {
    case PathType::Self: return "SELF";
    case PathType::NVL: return "NVL";
    case PathType::PIX: return "PIX";
    case PathType::PXB: return "PXB";
    case PathType::PHB: return "PHB";
    case PathType::NODE: return "NODE";
    case PathType::SYS: return "SYS";
  }
  return "?";
}

int commonAncestor(const TopologyModel& m, int a, int b) {
  if (!inTree(m, a) || !inTree(m, b)) return -1;
  std::vector<int> up = ancestors(m, a);
  for (int n = b; n >= 0; n = m.nodes[n].parent)
    if (std::find(up.begin(), up.end(), n) != up.end()) return n;
  return -1;
}

int treeDistance(const TopologyModel& m, int a, int b) {
  int lca = commonAncestor(m, a, b);
  if (lca < 0) return -1;
  int d = 0;
  for (int n = a; n != lca; n = m.nodes[n].parent) ++d;
  for (int n = b; n != lca; n = m.nodes[n].parent) ++d;
  return d;
}

PathType pathType(const TopologyModel& m, int a, int b) {
  if (a == b) return PathType::Self;
  const TopoNode& na = m.nodes[a];
  const TopoNode& nb = m.nodes[b];
  if (na.type == TopoNodeType::Gpu && nb.type == TopoNodeType::Gpu) {
    if (findLink(m, a, b, LinkType::NVLink) != nullptr) return PathType::NVL;
    if (m.nvSwitchNode >= 0 && findLink(m, a, m.nvSwitchNode, LinkType::NVLink) &&
        findLink(m, b, m.nvSwitchNode, LinkType::NVLink))
      return PathType::NVL;
  }
  int lca = commonAncestor(m, a, b);
  if (lca < 0) return PathType::SYS;
  switch (m.nodes[lca].type) {
    case TopoNodeType::PciBridge:
    case TopoNodeType::PciDevice:
    case TopoNodeType::Gpu:
    case TopoNodeType::Nic: {
      // A PCIe switch shows as an upstream bridge with one downstream bridge per port: "one
      // switch" means at most one bridge between each end and the common bridge.
      int da = 0, db = 0;
      for (int n = a; n != lca; n = m.nodes[n].parent) ++da;
      for (int n = b; n != lca; n = m.nodes[n].parent) ++db;
      return (da <= 2 && db <= 2) ? PathType::PIX : PathType::PXB;
    }
    case TopoNodeType::HostBridge: return PathType::PHB;
    case TopoNodeType::Package:
    case TopoNodeType::NumaNode: return PathType::NODE;
    default: return m.packages > 1 ? PathType::SYS : PathType::NODE;
  }
}

double pathBandwidthGBps(const TopologyModel& m, int a, int b) {
  if (a == b) return linkClassInfo(LinkType::Memory).nominalGBps;
  if (const TopoLink* l = findLink(m, a, b, LinkType::NVLink)) return l->bandwidthGBps;
  if (m.nvSwitchNode >= 0) {
    const TopoLink* la = findLink(m, a, m.nvSwitchNode, LinkType::NVLink);
    const TopoLink* lb = findLink(m, b, m.nvSwitchNode, LinkType::NVLink);
    if (la && lb) return std::min(la->bandwidthGBps, lb->bandwidthGBps);
  }
  int lca = commonAncestor(m, a, b);
  if (lca < 0) return 0;
  double bw = 1e30;
  int packageA = -1, packageB = -1;
  auto climb = [&](int from, int* package) {
    for (int n = from; n != lca; n = m.nodes[n].parent) {
      if (m.nodes[n].type == TopoNodeType::Package) *package = n;
      for (const TopoLink& l : m.links)
        if (l.a == n && l.b == m.nodes[n].parent) bw = std::min(bw, l.bandwidthGBps);
    }
  };
  climb(a, &packageA);
  climb(b, &packageB);
  if (packageA >= 0 && packageB >= 0 && packageA != packageB)
    if (const TopoLink* l = findLink(m, packageA, packageB, LinkType::InterSocket)) bw = std::min(bw, l->bandwidthGBps);
  return bw >= 1e30 ? linkClassInfo(LinkType::Memory).nominalGBps : bw;
}

std::vector<int> nearestNics(const TopologyModel& m, int gpuIndex) {
  std::vector<int> out;
  const GpuInfo* gpu = m.gpuByIndex(gpuIndex);
  if (gpu == nullptr) return out;
  int best = -1;
  for (const NicInfo& nic : m.nics) {
    int d = treeDistance(m, gpu->node, nic.node);
    if (d < 0) continue;
    if (best < 0 || d < best) {
      best = d;
      out.clear();
    }
    if (d == best) out.push_back(nic.index);
  }
  std::stable_sort(out.begin(), out.end(), [&](int x, int y) { return m.nics[x].speedGbps > m.nics[y].speedGbps; });
  return out;
}

int nicForNuma(const TopologyModel& m, int numaNode) {
  int best = -1;
  for (int pass = 0; pass < 2 && best < 0; ++pass) {
    for (const NicInfo& nic : m.nics) {
      if (pass == 0 && (numaNode < 0 || nic.numaNode != numaNode)) continue;
      if (best < 0 || nic.speedGbps > m.nics[best].speedGbps) best = nic.index;
    }
  }
  return best;
}

int numaNodeOfCpuset(const TopologyModel& m, const std::string& cpuset) {
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  hwloc_bitmap_t numa = hwloc_bitmap_alloc();
  int result = -1;
  if (hwloc_bitmap_sscanf(set, cpuset.c_str()) == 0 && !hwloc_bitmap_iszero(set)) {
    for (const NumaInfo& n : m.numaList) {
      if (hwloc_bitmap_sscanf(numa, n.cpuset.c_str()) != 0) continue;
      if (hwloc_bitmap_isincluded(set, numa)) {
        result = n.osIndex;
        break;
      }
    }
  }
  hwloc_bitmap_free(set);
  hwloc_bitmap_free(numa);
  return result;
}

}  // namespace weft
