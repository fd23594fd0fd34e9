// The topology the runtime uses: loaded from WEFT_TOPO_FILE (or NCCL_TOPO_FILE) when set,
// discovered through hwloc otherwise; dumped to WEFT_TOPO_DUMP_FILE (or NCCL_TOPO_DUMP_FILE)
// when set.
#pragma once

#include <optional>
#include <string>

#include "nccl.h"
#include "topology/topology_model.h"

namespace weft {

// The file to load instead of discovering (WEFT_TOPO_FILE first, then NCCL_TOPO_FILE).
std::optional<std::string> topologyFileFromEnv();
// The file to dump to (WEFT_TOPO_DUMP_FILE first, then NCCL_TOPO_DUMP_FILE).
std::optional<std::string> topologyDumpFileFromEnv();

// Load or discover, then dump when asked. A dump failure is returned as an error too: the user
// asked for the file.
ncclResult_t loadTopology(TopologyModel* out);

}  // namespace weft
