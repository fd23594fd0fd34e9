// Human- and script-readable renderings of the model: an indented tree, a link table, JSON.
#pragma once

#include <string>

#include "topology/topology_model.h"

namespace weft {

std::string formatTopologyTree(const TopologyModel& model);
// One line per link: type, bandwidth (GB/s, '*' when the table's nominal value), latency, ends.
std::string formatLinkTable(const TopologyModel& model);
// Also lists, per GPU, its nearest NICs and, per GPU pair, the path type.
std::string topologyToJson(const TopologyModel& model);

}  // namespace weft
