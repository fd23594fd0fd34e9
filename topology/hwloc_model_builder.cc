#include "topology/hwloc_model_builder.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <type_traits>
#include <utility>

#include "common/log.h"
#include "common/status.h"

namespace weft {
namespace {

// hwloc copies enum attributes (an OS device's, a bridge's, a cache's type) from an XML file
// unchecked, and loading an enum that holds none of its values is undefined behaviour
// (fuzz_topology_xml found a bridge type 5 and an OS device type 8): read them as integers.
template <typename Enum>
std::underlying_type_t<Enum> enumAsInteger(const Enum& field) {
  std::underlying_type_t<Enum> value;
  std::memcpy(&value, &field, sizeof value);
  return value;
}

std::string bitmapString(hwloc_const_bitmap_t set) {
  if (set == nullptr) return "";
  char* s = nullptr;
  if (hwloc_bitmap_asprintf(&s, set) < 0 || s == nullptr) return "";
  std::string out(s);
  std::free(s);
  return out;
}

std::string pciBusId(const hwloc_obj_attr_u::hwloc_pcidev_attr_s& pci) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", static_cast<unsigned>(pci.domain), static_cast<unsigned>(pci.bus),
                static_cast<unsigned>(pci.dev), static_cast<unsigned>(pci.func));
  return buf;
}

bool parseNumber(const char* text, double* value) {
  if (text == nullptr || *text == '\0') return false;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text, &end);
  if (errno != 0 || end == text) return false;
  while (*end == ' ') ++end;
  if (*end != '\0' || !(v >= 0)) return false;
  *value = v;
  return true;
}

class Builder {
 public:
  Builder(hwloc_topology_t topo, const std::string& origin, TopologyModel* m) : topo_(topo), origin_(origin), m_(m) {}

  ncclResult_t run();

 private:
  int addNode(TopoNodeType type, int parent, hwloc_obj_t obj, std::string name) {
    TopoNode n;
    n.id = static_cast<int>(m_->nodes.size());
    n.type = type;
    n.parent = parent;
    n.name = std::move(name);
    if (obj != nullptr) {
      hwloc_obj_t cpuObj = obj->cpuset ? obj : hwloc_get_non_io_ancestor_obj(topo_, obj);
      if (cpuObj != nullptr) {
        n.cpuset = bitmapString(cpuObj->cpuset);
        if (cpuObj->nodeset != nullptr && hwloc_bitmap_weight(cpuObj->nodeset) == 1)
          n.numaNode = hwloc_bitmap_first(cpuObj->nodeset);
      }
    }
    m_->nodes.push_back(n);
    if (parent >= 0) m_->nodes[parent].children.push_back(n.id);
    return n.id;
  }

  void addLink(int a, int b, LinkType type, double reportedGBps, std::string label) {
    TopoLink l;
    l.a = a;
    l.b = b;
    l.type = type;
    const LinkClassInfo& info = linkClassInfo(type);
    l.reported = reportedGBps > 0;
    l.bandwidthGBps = l.reported ? reportedGBps : info.nominalGBps;
    l.latencyUs = info.latencyUs;
    l.label = std::move(label);
    m_->links.push_back(std::move(l));
  }

  ncclResult_t infoNumber(hwloc_obj_t obj, const char* name, double* value, bool* present) {
    *present = false;
    const char* text = hwloc_obj_get_info_by_name(obj, name);
    if (text == nullptr) return ncclSuccess;
    if (!parseNumber(text, value))
      return fail(ncclInvalidArgument, "%s: %s object %s: attribute %s=\"%s\" is not a number", origin_.c_str(),
                  hwloc_obj_type_string(obj->type), describe(obj).c_str(), name, text);
    *present = true;
    return ncclSuccess;
  }

  std::string describe(hwloc_obj_t obj) {
    if (obj->type == HWLOC_OBJ_PCI_DEVICE) return pciBusId(obj->attr->pcidev);
    if (obj->name != nullptr) return obj->name;
    return "#" + std::to_string(obj->logical_index);
  }

  // PCIe attributes of the link above a PCI device or bridge.
  ncclResult_t pciLink(hwloc_obj_t obj, const hwloc_obj_attr_u::hwloc_pcidev_attr_s* pci, TopoNode* node) {
    double gen = 0, width = 0;
    bool hasGen = false, hasWidth = false;
    WEFT_CHECK(infoNumber(obj, kInfoPcieGen, &gen, &hasGen));
    WEFT_CHECK(infoNumber(obj, kInfoPcieWidth, &width, &hasWidth));
    if (hasGen && hasWidth) {
      node->pcieGen = static_cast<int>(gen);
      node->pcieWidth = static_cast<int>(width);
    }
    if (pci != nullptr && pci->linkspeed > 0) {
      node->upLinkGBps = pci->linkspeed;
    } else if (node->pcieGen > 0 && node->pcieWidth > 0) {
      node->upLinkGBps = pcieLaneGBps(node->pcieGen) * node->pcieWidth;
    }
    return ncclSuccess;
  }

  ncclResult_t walk(hwloc_obj_t obj, int modelParent);
  ncclResult_t pciDevice(hwloc_obj_t obj, int modelParent);
  ncclResult_t osDeviceOutsidePci(hwloc_obj_t obj, int modelParent);
  ncclResult_t nvlinks();
  void cpuSummary();
  void finishGpusAndNics();
  void treeLinks();

  hwloc_topology_t topo_;
  const std::string& origin_;
  TopologyModel* m_;
  std::map<int, int> cudaIndexOfNode_;
  std::map<int, hwloc_obj_t> pciObjOfNode_;
};

ncclResult_t Builder::run() {
  hwloc_obj_t root = hwloc_get_root_obj(topo_);
  const char* host = hwloc_obj_get_info_by_name(root, "HostName");
  m_->hostName = host ? host : "";
  cpuSummary();
  addNode(TopoNodeType::Machine, -1, root, "Machine");
  for (hwloc_obj_t c = root->first_child; c; c = c->next_sibling) WEFT_CHECK(walk(c, 0));
  for (hwloc_obj_t c = root->memory_first_child; c; c = c->next_sibling) WEFT_CHECK(walk(c, 0));
  for (hwloc_obj_t c = root->io_first_child; c; c = c->next_sibling) WEFT_CHECK(walk(c, 0));
  for (hwloc_obj_t c = root->misc_first_child; c; c = c->next_sibling) WEFT_CHECK(walk(c, 0));
  finishGpusAndNics();
  treeLinks();
  WEFT_CHECK(nvlinks());
  return ncclSuccess;
}

void Builder::cpuSummary() {
  m_->packages = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_PACKAGE);
  m_->numaNodes = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_NUMANODE);
  m_->cores = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_CORE);
  m_->pus = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_PU);
  for (int i = 0; i < m_->packages; ++i) {
    hwloc_obj_t p = hwloc_get_obj_by_type(topo_, HWLOC_OBJ_PACKAGE, i);
    PackageInfo info;
    info.osIndex = static_cast<int>(p->os_index);
    info.cpuset = bitmapString(p->cpuset);
    info.cores = hwloc_get_nbobjs_inside_cpuset_by_type(topo_, p->cpuset, HWLOC_OBJ_CORE);
    info.pus = hwloc_get_nbobjs_inside_cpuset_by_type(topo_, p->cpuset, HWLOC_OBJ_PU);
    const char* model = hwloc_obj_get_info_by_name(p, "CPUModel");
    if (model) {
      info.cpuModel = model;
      while (!info.cpuModel.empty() && info.cpuModel.back() == ' ') info.cpuModel.pop_back();
    }
    m_->packageList.push_back(info);
  }
  for (int i = 0; i < m_->numaNodes; ++i) {
    hwloc_obj_t n = hwloc_get_obj_by_type(topo_, HWLOC_OBJ_NUMANODE, i);
    NumaInfo info;
    info.osIndex = static_cast<int>(n->os_index);
    info.cpuset = bitmapString(n->cpuset);
    info.memoryBytes = n->attr->numanode.local_memory;
    hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(topo_, HWLOC_OBJ_PACKAGE, n);
    info.package = pkg ? static_cast<int>(pkg->os_index) : -1;
    m_->numaList.push_back(info);
  }
  const hwloc_obj_type_t cacheTypes[] = {HWLOC_OBJ_L1CACHE, HWLOC_OBJ_L1ICACHE, HWLOC_OBJ_L2CACHE, HWLOC_OBJ_L2ICACHE,
                                         HWLOC_OBJ_L3CACHE, HWLOC_OBJ_L3ICACHE, HWLOC_OBJ_L4CACHE, HWLOC_OBJ_L5CACHE};
  for (hwloc_obj_type_t t : cacheTypes) {
    int n = hwloc_get_nbobjs_by_type(topo_, t);
    if (n <= 0) continue;
    hwloc_obj_t first = hwloc_get_obj_by_type(topo_, t, 0);
    CacheLevelInfo c;
    c.level = static_cast<int>(first->attr->cache.depth);
    const auto cacheType = enumAsInteger(first->attr->cache.type);
    c.kind = cacheType == HWLOC_OBJ_CACHE_INSTRUCTION ? 'i' : cacheType == HWLOC_OBJ_CACHE_DATA ? 'd' : 'u';
    c.sizeBytes = first->attr->cache.size;
    c.count = n;
    m_->caches.push_back(c);
  }
}

ncclResult_t Builder::walk(hwloc_obj_t obj, int modelParent) {
  int here = modelParent;
  switch (obj->type) {
    case HWLOC_OBJ_PACKAGE: {
      here = addNode(TopoNodeType::Package, modelParent, obj, "Package#" + std::to_string(obj->os_index));
      m_->nodes[here].osIndex = static_cast<int>(obj->os_index);
      break;
    }
    case HWLOC_OBJ_NUMANODE: {
      here = addNode(TopoNodeType::NumaNode, modelParent, obj, "NUMA#" + std::to_string(obj->os_index));
      m_->nodes[here].osIndex = static_cast<int>(obj->os_index);
      m_->nodes[here].numaNode = static_cast<int>(obj->os_index);
      break;
    }
    case HWLOC_OBJ_BRIDGE: {
      const auto& br = obj->attr->bridge;
      char range[48];
      std::snprintf(range, sizeof range, "%04x:[%02x-%02x]", static_cast<unsigned>(br.downstream.pci.domain),
                    static_cast<unsigned>(br.downstream.pci.secondary_bus),
                    static_cast<unsigned>(br.downstream.pci.subordinate_bus));
      if (enumAsInteger(br.upstream_type) == HWLOC_OBJ_BRIDGE_HOST) {
        here = addNode(TopoNodeType::HostBridge, modelParent, obj, std::string("HostBridge ") + range);
        m_->nodes[here].busId = range;
      } else {
        std::string bus = pciBusId(br.upstream.pci);
        here = addNode(TopoNodeType::PciBridge, modelParent, obj, "PCIBridge " + bus);
        TopoNode& n = m_->nodes[here];
        n.busId = bus;
        n.pciVendor = br.upstream.pci.vendor_id;
        n.pciDevice = br.upstream.pci.device_id;
        n.pciClass = br.upstream.pci.class_id;
        WEFT_CHECK(pciLink(obj, &br.upstream.pci, &m_->nodes[here]));
      }
      break;
    }
    case HWLOC_OBJ_PCI_DEVICE: return pciDevice(obj, modelParent);
    case HWLOC_OBJ_OS_DEVICE: return osDeviceOutsidePci(obj, modelParent);
    default: break;  // groups, caches, cores, PUs, misc: not nodes of the model
  }
  if (obj->type == HWLOC_OBJ_CORE || obj->type == HWLOC_OBJ_PU) return ncclSuccess;
  for (hwloc_obj_t c = obj->first_child; c; c = c->next_sibling) WEFT_CHECK(walk(c, here));
  for (hwloc_obj_t c = obj->memory_first_child; c; c = c->next_sibling) WEFT_CHECK(walk(c, here));
  for (hwloc_obj_t c = obj->io_first_child; c; c = c->next_sibling) WEFT_CHECK(walk(c, here));
  return ncclSuccess;
}

ncclResult_t Builder::pciDevice(hwloc_obj_t obj, int modelParent) {
  const hwloc_obj_attr_u::hwloc_pcidev_attr_s& pci = obj->attr->pcidev;
  std::string bus = pciBusId(pci);
  std::string netdev, verbs, gpuModel;
  int cudaIndex = -1;
  bool gpuOsdev = false;
  double speed = 0;
  bool hasSpeed = false;
  for (hwloc_obj_t c = obj->io_first_child; c; c = c->next_sibling) {
    if (c->type != HWLOC_OBJ_OS_DEVICE || c->name == nullptr) continue;
    const char* subtype = c->subtype ? c->subtype : "";
    switch (enumAsInteger(c->attr->osdev.type)) {
      case HWLOC_OBJ_OSDEV_NETWORK:
        if (netdev.empty()) netdev = c->name;
        break;
      case HWLOC_OBJ_OSDEV_OPENFABRICS:
        if (verbs.empty()) verbs = c->name;
        break;
      case HWLOC_OBJ_OSDEV_COPROC:
      case HWLOC_OBJ_OSDEV_GPU:
        if (!std::strcmp(subtype, "CUDA") || !std::strcmp(subtype, "NVML") || !std::strcmp(subtype, "RSMI") ||
            !std::strcmp(subtype, "LevelZero") || !std::strncmp(c->name, "cuda", 4) ||
            !std::strncmp(c->name, "nvml", 4)) {
          gpuOsdev = true;
          if (!std::strncmp(c->name, "cuda", 4)) cudaIndex = std::atoi(c->name + 4);
          const char* model = hwloc_obj_get_info_by_name(c, "GPUModel");
          if (model && gpuModel.empty()) gpuModel = model;
        }
        break;
      default: break;
    }
    double s = 0;
    bool present = false;
    WEFT_CHECK(infoNumber(c, kInfoSpeedGbps, &s, &present));
    if (present && !hasSpeed) {
      speed = s;
      hasSpeed = true;
    }
  }
  double s = 0;
  bool present = false;
  WEFT_CHECK(infoNumber(obj, kInfoSpeedGbps, &s, &present));
  if (present && !hasSpeed) {
    speed = s;
    hasSpeed = true;
  }

  unsigned baseClass = pci.class_id >> 8;
  bool gpuClass = (pci.class_id == 0x0300 || pci.class_id == 0x0302 || pci.class_id == 0x0380) &&
                  (pci.vendor_id == 0x10de || pci.vendor_id == 0x1002);
  TopoNodeType type = TopoNodeType::PciDevice;
  if (gpuOsdev || gpuClass) {
    type = TopoNodeType::Gpu;
  } else if (!netdev.empty() || !verbs.empty() || baseClass == 0x02) {
    type = TopoNodeType::Nic;
  }
  int id = addNode(type, modelParent, obj, bus);
  TopoNode& n = m_->nodes[id];
  n.busId = bus;
  n.pciVendor = pci.vendor_id;
  n.pciDevice = pci.device_id;
  n.pciClass = pci.class_id;
  WEFT_CHECK(pciLink(obj, &pci, &m_->nodes[id]));
  pciObjOfNode_[id] = obj;

  if (type == TopoNodeType::Gpu) {
    GpuInfo g;
    g.node = id;
    g.busId = bus;
    if (gpuModel.empty()) {
      const char* model = hwloc_obj_get_info_by_name(obj, "PCIDevice");
      if (model) gpuModel = model;
    }
    g.model = gpuModel;
    g.numaNode = m_->nodes[id].numaNode;
    g.cpuset = m_->nodes[id].cpuset;
    if (cudaIndex >= 0) cudaIndexOfNode_[id] = cudaIndex;
    m_->gpus.push_back(g);
  } else if (type == TopoNodeType::Nic) {
    NicInfo nic;
    nic.node = id;
    nic.busId = bus;
    nic.netdev = netdev;
    nic.verbsDevice = verbs;
    nic.name = !verbs.empty() ? verbs : !netdev.empty() ? netdev : bus;
    nic.speedGbps = hasSpeed ? speed : 0;
    nic.numaNode = m_->nodes[id].numaNode;
    nic.cpuset = m_->nodes[id].cpuset;
    m_->nodes[id].name = nic.name;
    m_->nics.push_back(nic);
  }
  // PCI devices below this one (a device that is also a bridge is reported as a Bridge).
  for (hwloc_obj_t c = obj->io_first_child; c; c = c->next_sibling)
    if (c->type != HWLOC_OBJ_OS_DEVICE) WEFT_CHECK(walk(c, id));
  return ncclSuccess;
}

// A network or verbs OS device that hwloc could not attach to a PCI device (virtual NICs).
ncclResult_t Builder::osDeviceOutsidePci(hwloc_obj_t obj, int modelParent) {
  if (obj->name == nullptr) return ncclSuccess;
  const auto osdevType = enumAsInteger(obj->attr->osdev.type);
  if (osdevType != HWLOC_OBJ_OSDEV_NETWORK && osdevType != HWLOC_OBJ_OSDEV_OPENFABRICS) return ncclSuccess;
  if (std::strcmp(obj->name, "lo") == 0) return ncclSuccess;
  double speed = 0;
  bool present = false;
  WEFT_CHECK(infoNumber(obj, kInfoSpeedGbps, &speed, &present));
  int id = addNode(TopoNodeType::Nic, modelParent, obj, obj->name);
  NicInfo nic;
  nic.node = id;
  nic.name = obj->name;
  if (osdevType == HWLOC_OBJ_OSDEV_NETWORK)
    nic.netdev = obj->name;
  else
    nic.verbsDevice = obj->name;
  nic.speedGbps = present ? speed : 0;
  nic.numaNode = m_->nodes[id].numaNode;
  nic.cpuset = m_->nodes[id].cpuset;
  m_->nics.push_back(nic);
  return ncclSuccess;
}

void Builder::finishGpusAndNics() {
  auto& gpus = m_->gpus;
  std::set<int> cudaIndices;
  for (const GpuInfo& g : gpus) {
    auto it = cudaIndexOfNode_.find(g.node);
    if (it != cudaIndexOfNode_.end()) cudaIndices.insert(it->second);
  }
  bool useCuda = !gpus.empty() && cudaIndices.size() == gpus.size();
  if (useCuda) {
    for (GpuInfo& g : gpus) g.index = cudaIndexOfNode_[g.node];
    std::sort(gpus.begin(), gpus.end(), [](const GpuInfo& a, const GpuInfo& b) { return a.index < b.index; });
  } else {
    std::sort(gpus.begin(), gpus.end(), [](const GpuInfo& a, const GpuInfo& b) { return a.busId < b.busId; });
    for (size_t i = 0; i < gpus.size(); ++i) gpus[i].index = static_cast<int>(i);
  }
  for (const GpuInfo& g : gpus) m_->nodes[g.node].name = "GPU" + std::to_string(g.index);

  auto& nics = m_->nics;
  std::stable_sort(nics.begin(), nics.end(), [](const NicInfo& a, const NicInfo& b) {
    if (a.busId.empty() != b.busId.empty()) return b.busId.empty();
    return a.busId < b.busId;
  });
  for (size_t i = 0; i < nics.size(); ++i) nics[i].index = static_cast<int>(i);
}

void Builder::treeLinks() {
  // Tree edges.
  size_t treeNodes = m_->nodes.size();
  for (size_t i = 1; i < treeNodes; ++i) {
    TopoNode& n = m_->nodes[i];
    if (n.parent < 0) continue;
    switch (n.type) {
      case TopoNodeType::Package: break;  // packages hang off the machine; the inter-socket links are added below
      case TopoNodeType::NumaNode: addLink(n.id, n.parent, LinkType::Memory, 0, ""); break;
      case TopoNodeType::HostBridge: addLink(n.id, n.parent, LinkType::PCIeRoot, 0, ""); break;
      default: {
        if (n.busId.empty()) break;  // a NIC outside PCI: only its network link
        std::string label;
        if (n.pcieGen > 0 && n.pcieWidth > 0) {
          label = "Gen" + std::to_string(n.pcieGen) + " x" + std::to_string(n.pcieWidth);
        }
        addLink(n.id, n.parent, LinkType::PCIe, n.upLinkGBps, label);
        break;
      }
    }
  }
  // Inter-socket links: every package pair (hwloc does not report the socket interconnect).
  std::vector<int> packages;
  for (const TopoNode& n : m_->nodes)
    if (n.type == TopoNodeType::Package) packages.push_back(n.id);
  for (size_t i = 0; i < packages.size(); ++i)
    for (size_t j = i + 1; j < packages.size(); ++j) addLink(packages[i], packages[j], LinkType::InterSocket, 0, "");
  // Network.
  if (!m_->nics.empty()) {
    m_->networkNode = addNode(TopoNodeType::Network, -1, nullptr, "Network");
    for (const NicInfo& nic : m_->nics) {
      char label[32] = "";
      if (nic.speedGbps > 0) std::snprintf(label, sizeof label, "%g Gb/s", nic.speedGbps);
      addLink(nic.node, m_->networkNode, LinkType::Network, nic.speedGbps / 8.0, label);
    }
  }
}

ncclResult_t Builder::nvlinks() {
  std::set<std::pair<int, int>> seen;
  auto ensureSwitch = [&]() {
    if (m_->nvSwitchNode < 0) m_->nvSwitchNode = addNode(TopoNodeType::NvSwitch, -1, nullptr, "NVSwitch");
    return m_->nvSwitchNode;
  };
  auto gpuOfNode = [&](int node) -> GpuInfo* {
    for (GpuInfo& g : m_->gpus)
      if (g.node == node) return &g;
    return nullptr;
  };
  auto addNv = [&](GpuInfo* g, int peerNode, double gbps) {
    std::pair<int, int> key(std::min(g->node, peerNode), std::max(g->node, peerNode));
    if (!seen.insert(key).second) return;
    addLink(g->node, peerNode, LinkType::NVLink, gbps, "");
    g->nvlinkGBps += gbps;
    if (peerNode == m_->nvSwitchNode) g->onNvSwitch = true;
    if (GpuInfo* peer = gpuOfNode(peerNode)) {
      if (peer != g) peer->nvlinkGBps += gbps;
    }
  };

  // weft's attributes on the GPU PCI devices (hand-written files, dumps).
  for (GpuInfo& g : m_->gpus) {
    hwloc_obj_t obj = pciObjOfNode_[g.node];
    for (unsigned i = 0; i < obj->infos_count; ++i) {
      if (std::strcmp(obj->infos[i].name, kInfoNvlink) != 0) continue;
      const char* value = obj->infos[i].value;
      char peer[64] = "";
      char bw[32] = "";
      char extra[8] = "";
      double gbps = 0;
      if (std::sscanf(value, "%63s %31s %7s", peer, bw, extra) != 2 || !parseNumber(bw, &gbps) || gbps <= 0)
        return fail(ncclInvalidArgument,
                    "%s: GPU %s: attribute %s=\"%s\" is not \"NVSwitch <GB/s>\" or \"<peer bus id> <GB/s>\"",
                    origin_.c_str(), g.busId.c_str(), kInfoNvlink, value);
      if (strcasecmp(peer, "NVSwitch") == 0) {
        addNv(&g, ensureSwitch(), gbps);
        continue;
      }
      const GpuInfo* p = m_->gpuByBusId(peer);
      if (p == nullptr)
        return fail(ncclInvalidArgument, "%s: GPU %s: %s peer \"%s\" is not a GPU of this topology", origin_.c_str(),
                    g.busId.c_str(), kInfoNvlink, peer);
      addNv(&g, p->node, gbps);
    }
  }

  // hwloc's NVML backend: the NVLinkBandwidth matrix (MB/s) between GPUs and NVSwitches.
  unsigned nr = 1;
  hwloc_distances_s* dist = nullptr;
  if (hwloc_distances_get_by_name(topo_, "NVLinkBandwidth", &nr, &dist, 0) == 0 && nr >= 1 && dist) {
    auto modelNode = [&](hwloc_obj_t o) -> int {
      if (o == nullptr) return -1;
      if (o->type == HWLOC_OBJ_OS_DEVICE) o = o->parent;
      if (o && o->type == HWLOC_OBJ_PCI_DEVICE) {
        std::string bus = pciBusId(o->attr->pcidev);
        if (const GpuInfo* g = m_->gpuByBusId(bus)) return g->node;
      }
      if (o && o->subtype && strcasecmp(o->subtype, "NVSwitch") == 0) return ensureSwitch();
      return -1;
    };
    for (unsigned i = 0; i < dist->nbobjs; ++i) {
      int a = modelNode(dist->objs[i]);
      GpuInfo* g = a >= 0 ? gpuOfNode(a) : nullptr;
      if (g == nullptr) continue;
      for (unsigned j = 0; j < dist->nbobjs; ++j) {
        if (i == j) continue;
        uint64_t mbps = dist->values[i * dist->nbobjs + j];
        int b = modelNode(dist->objs[j]);
        if (mbps == 0 || b < 0) continue;
        addNv(g, b, static_cast<double>(mbps) / 1000.0);
      }
    }
    hwloc_distances_release(topo_, dist);
  }
  return ncclSuccess;
}

}  // namespace

ncclResult_t buildModelFromHwloc(hwloc_topology_t topology, const std::string& source, const std::string& origin,
                                 TopologyModel* out) {
  TopologyModel model;
  model.source = source;
  hwloc_obj_t root = hwloc_get_root_obj(topology);
  if (hwloc_obj_get_info_by_name(root, kInfoModelVersion) == nullptr) hwloc_obj_add_info(root, kInfoModelVersion, "1");
  Builder builder(topology, origin, &model);
  WEFT_CHECK(builder.run());
  char* buffer = nullptr;
  int length = 0;
  if (hwloc_topology_export_xmlbuffer(topology, &buffer, &length, 0) < 0 || buffer == nullptr)
    return fail(ncclSystemError, "%s: hwloc could not export the topology as XML: %s", origin.c_str(),
                std::strerror(errno));
  model.xml.assign(buffer, length > 0 && buffer[length - 1] == '\0' ? length - 1 : length);
  hwloc_free_xmlbuffer(topology, buffer);
  WEFT_INFO(kLogGraph, "topology from %s: %d packages, %d NUMA nodes, %d cores, %d PUs, %zu GPUs, %zu NICs",
            origin.c_str(), model.packages, model.numaNodes, model.cores, model.pus, model.gpus.size(),
            model.nics.size());
  *out = std::move(model);
  return ncclSuccess;
}

}  // namespace weft
