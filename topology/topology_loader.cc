#include "topology/topology_loader.h"

#include "common/env.h"
#include "common/log.h"
#include "common/status.h"
#include "topology/hwloc_discovery.h"
#include "topology/topology_xml.h"

namespace weft {
namespace {

std::optional<std::string> firstSet(const char* a, const char* b) {
  for (const char* name : {a, b}) {
    std::optional<std::string> v = envString(name);
    if (v && !v->empty()) return v;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> topologyFileFromEnv() { return firstSet("WEFT_TOPO_FILE", "NCCL_TOPO_FILE"); }

std::optional<std::string> topologyDumpFileFromEnv() {
  return firstSet("WEFT_TOPO_DUMP_FILE", "NCCL_TOPO_DUMP_FILE");
}

ncclResult_t loadTopology(TopologyModel* out) {
  TopologyModel model;
  if (std::optional<std::string> file = topologyFileFromEnv()) {
    WEFT_INFO(kLogGraph, "topology: loading %s instead of discovering", file->c_str());
    WEFT_CHECK(loadTopologyFile(*file, &model));
  } else {
    WEFT_CHECK(discoverTopology(&model));
  }
  if (std::optional<std::string> dump = topologyDumpFileFromEnv()) {
    WEFT_CHECK(writeTopologyXml(model, *dump));
    WEFT_INFO(kLogGraph, "topology: dumped to %s", dump->c_str());
  }
  *out = std::move(model);
  return ncclSuccess;
}

}  // namespace weft
