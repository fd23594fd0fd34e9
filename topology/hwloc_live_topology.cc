#include "topology/hwloc_live_topology.h"

namespace weft {

int initLiveHwlocTopology(hwloc_topology_t* topo) {
  if (hwloc_topology_init(topo) != 0) return -1;
  // weft reads no OpenCL devices (GPUs come from the CUDA, NVML, RSMI and LevelZero plugins),
  // and the OpenCL plugin initializes every installed OpenCL driver, which is slow and leaks
  // memory that the leak checker then reports against whichever test loaded hwloc.
  hwloc_topology_set_components(*topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "opencl");
  return 0;
}

}  // namespace weft
