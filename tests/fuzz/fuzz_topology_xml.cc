// WEFT_TOPO_FILE's XML through hwloc's reader and weft's model builder.
#include <cstddef>
#include <cstdint>
#include <string>

#include "topology/topology_xml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  weft::TopologyModel model;
  (void)weft::loadTopologyXmlText(std::string(reinterpret_cast<const char*>(data), size), "fuzz", &model);
  return 0;
}
