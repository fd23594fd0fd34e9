#include "topology/hwloc_discovery.h"

#include <hwloc.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>

#include "common/status.h"
#include "topology/hwloc_live_topology.h"
#include "topology/hwloc_model_builder.h"

namespace weft {
namespace {

// hwloc reads PCI link bandwidth but keeps neither the generation nor the width, and has no
// NIC rate at all; these few sysfs files fill the gap (nothing else is read by hand).
bool readFirstLine(const std::string& path, std::string* line) {
  std::ifstream in(path);
  if (!in) return false;
  return static_cast<bool>(std::getline(in, *line));
}

void addInfoOnce(hwloc_obj_t obj, const char* name, const std::string& value) {
  if (hwloc_obj_get_info_by_name(obj, name) == nullptr) hwloc_obj_add_info(obj, name, value.c_str());
}

void annotatePci(hwloc_obj_t obj, const hwloc_obj_attr_u::hwloc_pcidev_attr_s& pci) {
  char bus[32];
  std::snprintf(bus, sizeof bus, "%04x:%02x:%02x.%x", static_cast<unsigned>(pci.domain), static_cast<unsigned>(pci.bus),
                static_cast<unsigned>(pci.dev), static_cast<unsigned>(pci.func));
  std::string base = std::string("/sys/bus/pci/devices/") + bus + "/";
  std::string speed, width;
  if (!readFirstLine(base + "current_link_speed", &speed) || !readFirstLine(base + "current_link_width", &width))
    return;
  double gts = std::atof(speed.c_str());  // "16.0 GT/s PCIe"
  int w = std::atoi(width.c_str());
  int gen = gts >= 60 ? 6 : gts >= 30 ? 5 : gts >= 15 ? 4 : gts >= 7 ? 3 : gts >= 4 ? 2 : gts >= 2 ? 1 : 0;
  if (gen == 0 || w <= 0) return;
  addInfoOnce(obj, kInfoPcieGen, std::to_string(gen));
  addInfoOnce(obj, kInfoPcieWidth, std::to_string(w));
}

void annotateNic(hwloc_obj_t osdev) {
  std::string line;
  double gbps = 0;
  if (osdev->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS) {
    // "400 Gb/sec (4X NDR)"
    if (readFirstLine(std::string("/sys/class/infiniband/") + osdev->name + "/ports/1/rate", &line))
      gbps = std::atof(line.c_str());
  } else if (osdev->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK) {
    // Mbit/s; -1 (or an error) when the driver does not know (virtio)
    if (readFirstLine(std::string("/sys/class/net/") + osdev->name + "/speed", &line))
      gbps = std::atof(line.c_str()) / 1000.0;
  }
  if (gbps > 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", gbps);
    addInfoOnce(osdev, kInfoSpeedGbps, buf);
  }
}

// This machine as hwloc sees it, with weft's annotations, loaded once and kept for the life of
// the process: the machine does not change, and hwloc's PCI plugin (libpciaccess) allocates
// state that it frees only when the plugin is unloaded, which the leak checker would report
// against every test that discovers. Read-only after the load, so threads may share it.
ncclResult_t loadAnnotatedMachine(hwloc_topology_t* out) {
  static hwloc_topology_t machine = nullptr;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    hwloc_topology_t topo;
    if (initLiveHwlocTopology(&topo) != 0) {
      error = std::string("hwloc_topology_init failed: ") + std::strerror(errno);
      return;
    }
    hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    hwloc_topology_set_icache_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL);  // as lstopo shows them
    if (hwloc_topology_load(topo) != 0) {
      error = std::string("hwloc could not discover this machine's topology: ") + std::strerror(errno);
      hwloc_topology_destroy(topo);
      return;
    }
    for (hwloc_obj_t o = hwloc_get_next_pcidev(topo, nullptr); o; o = hwloc_get_next_pcidev(topo, o))
      annotatePci(o, o->attr->pcidev);
    for (hwloc_obj_t o = hwloc_get_next_bridge(topo, nullptr); o; o = hwloc_get_next_bridge(topo, o))
      if (o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI) annotatePci(o, o->attr->bridge.upstream.pci);
    for (hwloc_obj_t o = hwloc_get_next_osdev(topo, nullptr); o; o = hwloc_get_next_osdev(topo, o))
      if (o->name != nullptr) annotateNic(o);
    addInfoOnce(hwloc_get_root_obj(topo), kInfoModelVersion, "1");  // so that building a model only reads
    machine = topo;
  });
  if (!machine) return fail(ncclSystemError, "%s", error.c_str());
  *out = machine;
  return ncclSuccess;
}

}  // namespace

ncclResult_t discoverTopology(TopologyModel* out) {
  hwloc_topology_t machine = nullptr;
  WEFT_CHECK(loadAnnotatedMachine(&machine));
  return buildModelFromHwloc(machine, "hwloc", "hwloc discovery", out);
}

}  // namespace weft
