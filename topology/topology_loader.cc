#include "topology/topology_loader.h"

#include "common/log.h"
#include "common/settings.h"
#include "common/status.h"
#include "topology/hwloc_discovery.h"
#include "topology/topology_xml.h"

namespace weft {
namespace {

std::optional<std::string> firstSet(Setting a, Setting b) {
  for (Setting setting : {a, b}) {
    std::optional<std::string> v = settingString(setting);
    if (v && !v->empty()) return v;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> topologyFileFromEnv() { return firstSet(Setting::WeftTopoFile, Setting::NcclTopoFile); }

std::optional<std::string> topologyDumpFileFromEnv() {
  return firstSet(Setting::WeftTopoDumpFile, Setting::NcclTopoDumpFile);
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
