// Turns a loaded hwloc topology (live, XML or synthetic) into a TopologyModel. The only place
// that interprets hwloc objects; discovery and the XML loader both end here.
#pragma once

#include <hwloc.h>

#include <string>

#include "nccl.h"
#include "topology/topology_model.h"

namespace weft {

// weft's own info attributes on hwloc objects. They survive hwloc's XML export and import, so
// a dump carries them and a hand-written file can set them.
inline constexpr const char* kInfoSpeedGbps = "WeftSpeedGbps";  // NIC OS device or PCI device
inline constexpr const char* kInfoPcieGen = "WeftPCIeGen";      // PCI device or bridge
inline constexpr const char* kInfoPcieWidth = "WeftPCIeWidth";  // PCI device or bridge
// On a GPU's PCI device, one per peer: "NVSwitch <GB/s>" or "<peer GPU bus id> <GB/s>".
inline constexpr const char* kInfoNvlink = "WeftNVLink";
inline constexpr const char* kInfoModelVersion = "WeftModelVersion";  // on the root object

// Builds `out` from `topology` and stores the topology's XML export in out->xml. `origin` names
// the input in error messages (a file name, "hwloc", ...). Fails with ncclInvalidArgument when
// a weft attribute does not parse.
ncclResult_t buildModelFromHwloc(hwloc_topology_t topology, const std::string& source, const std::string& origin,
                                 TopologyModel* out);

}  // namespace weft
