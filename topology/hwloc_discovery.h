// Live discovery: asks hwloc about this machine (CPUs, caches, NUMA, PCI tree, GPUs, NICs) and
// records what hwloc does not report (NIC port rates, PCIe generation and width) as weft info
// attributes, so that a dump of the result carries them.
#pragma once

#include "nccl.h"
#include "topology/topology_model.h"

namespace weft {

ncclResult_t discoverTopology(TopologyModel* out);

}  // namespace weft
