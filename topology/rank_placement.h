// Where one rank runs, as gathered during bootstrap: its host, CPU binding, NUMA node, GPU and
// NIC. describeThisRank() fills it in for the calling rank; encode/decode turn it into the
// bytes the bootstrap exchanges (decode checks every length: a short or corrupt record is an
// error, never a crash).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nccl.h"
#include "topology/topology_model.h"

namespace weft {

struct RankPlacement {
  std::string hostId;    // hostIdentity()
  int numaNode = -1;     // NUMA node (os index) of the CPU binding, -1 when it spans several
  std::string cpuset;    // CPU binding, hwloc bitmap string
  int gpuIndex = -1;     // CUDA device, -1 for a host-memory rank
  std::string gpuBusId;  // "0000:18:00.0", "" when unknown or none
  std::string nicName;   // the NIC this rank should use ("mlx5_0"), "" when none
  double nicSpeedGbps = 0;
  int pid = 0;

  bool operator==(const RankPlacement&) const = default;
};

// The calling rank. `cudaDevice` is the CUDA device the rank uses (-1: none); `gpuBusId` its PCI
// bus id when the caller knows it (cudaDeviceGetPCIBusId), else the model's GPU `cudaDevice`
// gives it. The NIC is the nearest one to the GPU, or for a rank without a GPU the fastest NIC
// on its NUMA node.
RankPlacement describeThisRank(const TopologyModel& model, int cudaDevice, const std::string& gpuBusId = "");

std::vector<uint8_t> encodeRankPlacement(const RankPlacement& placement);
// Fails with ncclInvalidArgument (message: which field, which length) on a record that is
// short, long, of another version, or with an oversize string.
ncclResult_t decodeRankPlacement(const uint8_t* data, size_t size, RankPlacement* out);

}  // namespace weft
