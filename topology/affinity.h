// Distances in the model and what they imply: which NIC(s) serve a GPU, how two devices are
// connected (NCCL's path classes), which NUMA node a CPU set belongs to.
#pragma once

#include <string>
#include <vector>

#include "topology/topology_model.h"

namespace weft {

// NCCL's path classes, nearest first.
enum class PathType : int {
  Self = 0,  // same node
  NVL,       // GPU <-> GPU through NVLink (direct or NVSwitch)
  PIX,       // at most one PCIe switch between them
  PXB,       // several PCIe switches, no host bridge
  PHB,       // through a PCIe host bridge
  NODE,      // through the CPU package / NUMA node
  SYS,       // across the inter-socket link
};
const char* pathTypeName(PathType type);

// Hops between two nodes through the tree (PCI, package, machine); -1 if not both in the tree.
int treeDistance(const TopologyModel& model, int a, int b);
// Lowest common ancestor in the tree, -1 if none.
int commonAncestor(const TopologyModel& model, int a, int b);
PathType pathType(const TopologyModel& model, int a, int b);
// Bandwidth of the narrowest link on the path (NVLink when the two GPUs have one), GB/s; 0 when
// there is no path.
double pathBandwidthGBps(const TopologyModel& model, int a, int b);

// Indices into model.nics of the NIC(s) nearest to GPU `gpuIndex` by PCI distance (all of those
// at the minimal distance, fastest first); empty when there is no NIC or no such GPU.
std::vector<int> nearestNics(const TopologyModel& model, int gpuIndex);
// The NIC a rank without a GPU should use: fastest NIC local to `numaNode`, else the fastest
// NIC; -1 when none.
int nicForNuma(const TopologyModel& model, int numaNode);

// The NUMA node (os index) whose CPUs contain every CPU of `cpuset` (hwloc bitmap string);
// -1 when the set spans several nodes or does not parse.
int numaNodeOfCpuset(const TopologyModel& model, const std::string& cpuset);

}  // namespace weft
