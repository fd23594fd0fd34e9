// The topology model: what one host looks like to weft. Built from hwloc (live discovery,
// hwloc XML or a synthetic description) by topology/hwloc_model_builder.cc; plain data with no
// hwloc types, so algorithms/ and tools can read it without hwloc.
//
// The model is a tree of nodes (machine, packages, NUMA nodes, PCI host bridges, PCI bridges,
// PCI devices, GPUs, NICs, an NVSwitch fabric, the network) plus a list of links with a type
// and a bandwidth. Tree edges are links; NVLink and inter-socket links are extra edges.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "topology/link_model.h"

namespace weft {

enum class TopoNodeType : int {
  Machine = 0,
  Package,
  NumaNode,
  HostBridge,
  PciBridge,
  PciDevice,  // a PCI function that is neither a GPU nor a NIC (storage, ...)
  Gpu,
  Nic,
  NvSwitch,  // the NVSwitch fabric of the host (one node however many switch chips)
  Network,   // the outside world, at the far end of every NIC
};
const char* topoNodeTypeName(TopoNodeType type);

struct TopoNode {
  int id = -1;
  TopoNodeType type = TopoNodeType::Machine;
  int parent = -1;  // tree parent (-1 for the machine and the network)
  std::vector<int> children;
  std::string name;    // "Package#0", "NUMA#1", "GPU0", "mlx5_0", "0000:17:00.0"
  std::string busId;   // PCI bus id of a PCI object; "0000:[00-0f]" bus range of a bridge
  int osIndex = -1;    // package / NUMA os index
  std::string cpuset;  // hwloc bitmap string of the CPUs local to this node
  int numaNode = -1;   // os index of the local NUMA node, -1 when none or several
  uint16_t pciVendor = 0, pciDevice = 0, pciClass = 0;
  double upLinkGBps = 0;           // PCI: bandwidth of the link to the parent (0: unknown)
  int pcieGen = 0, pcieWidth = 0;  // PCI: when known
};

struct TopoLink {
  int a = -1, b = -1;  // node ids; for tree edges a is the child, b the parent
  LinkType type = LinkType::PCIe;
  double bandwidthGBps = 0;  // per direction; the table's nominal value when not reported
  double latencyUs = 0;
  bool reported = false;  // bandwidth came from the hardware or the file, not the table
  std::string label;      // "Gen5 x16", "NDR 400 Gb/s", "18 links"
};

struct PackageInfo {
  int osIndex = -1;
  std::string cpuset;
  int cores = 0, pus = 0;
  std::string cpuModel;
};

struct NumaInfo {
  int osIndex = -1;
  std::string cpuset;
  uint64_t memoryBytes = 0;
  int package = -1;  // os index of the enclosing package, -1 when none
};

struct CacheLevelInfo {
  int level = 0;
  char kind = 'u';         // 'd' data, 'i' instruction, 'u' unified
  uint64_t sizeBytes = 0;  // of one instance
  int count = 0;
};

struct GpuInfo {
  int index = -1;     // CUDA device index (from hwloc's cudaN), else PCI bus order
  int node = -1;      // model node id
  std::string busId;  // "0000:18:00.0"
  std::string model;  // "NVIDIA H100 80GB HBM3" when known
  int numaNode = -1;
  std::string cpuset;
  double nvlinkGBps = 0;  // total NVLink bandwidth per direction, 0 when none
  bool onNvSwitch = false;
};

struct NicInfo {
  int index = -1;  // position in TopologyModel::nics (PCI bus order)
  int node = -1;
  std::string name;         // the verbs device when there is one ("mlx5_0"), else the netdev
  std::string netdev;       // "ibp24s0", "eth0" ("" when none)
  std::string verbsDevice;  // "mlx5_0" ("" when none)
  std::string busId;        // "" for a NIC that hwloc does not place on PCI
  double speedGbps = 0;     // port rate or interface speed, Gbit/s; 0 when unknown
  int numaNode = -1;
  std::string cpuset;
};

struct TopologyModel {
  std::string source;    // "hwloc" (live), "xml:<path>", "synthetic:<description>"
  std::string hostName;  // from hwloc's HostName info when present
  int packages = 0, numaNodes = 0, cores = 0, pus = 0;
  std::vector<PackageInfo> packageList;
  std::vector<NumaInfo> numaList;
  std::vector<CacheLevelInfo> caches;  // one entry per cache level and kind, L1 first
  std::vector<TopoNode> nodes;         // nodes[i].id == i; nodes[0] is the machine
  std::vector<TopoLink> links;
  std::vector<GpuInfo> gpus;  // sorted by index
  std::vector<NicInfo> nics;  // sorted by bus id
  int nvSwitchNode = -1;      // node id of the NVSwitch fabric, -1 when none
  int networkNode = -1;       // node id of the network, -1 when the host has no NIC
  std::string xml;            // hwloc XML (with weft's info attributes): the dump

  const GpuInfo* gpuByIndex(int index) const;
  const GpuInfo* gpuByBusId(const std::string& busId) const;
  const NicInfo* nicByName(const std::string& name) const;
  // Links touching `node`.
  std::vector<const TopoLink*> linksOf(int node) const;
};

// Normalizes a PCI bus id to "dddd:bb:dd.f" lower case ("18:00.0" gets domain 0000);
// returns "" when `busId` does not parse.
std::string normalizeBusId(const std::string& busId);

}  // namespace weft
