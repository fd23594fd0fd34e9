// Loading a topology instead of discovering it, and dumping the model.
//
// The file format is hwloc's XML (what `lstopo --of xml` writes) with weft's info attributes
// (see hwloc_model_builder.h); a dump can be read by lstopo and a file from lstopo can be
// loaded here. A synthetic hwloc description ("pack:2 numa:1 core:8 pu:2") is accepted as
// "synthetic:<description>" or as the content of a file whose first character is not '<'.
#pragma once

#include <string>

#include "nccl.h"
#include "topology/topology_model.h"

namespace weft {

// Loads `path` (XML or synthetic, see above). A file that cannot be read, is not well-formed,
// is truncated or is not an hwloc topology fails with ncclInvalidArgument and a message naming
// the file and the problem (line number where there is one).
ncclResult_t loadTopologyFile(const std::string& path, TopologyModel* out);
// `origin` names the text in error messages.
ncclResult_t loadTopologyXmlText(const std::string& text, const std::string& origin, TopologyModel* out);
ncclResult_t loadTopologySynthetic(const std::string& description, TopologyModel* out);

// Writes model.xml to `path` (atomically: a temporary file renamed into place).
ncclResult_t writeTopologyXml(const TopologyModel& model, const std::string& path);

// "" when `text` is well-formed XML whose root element is <topology>; otherwise the problem,
// e.g. "line 12: </object> closes <info> opened on line 11" or "the file ends inside <object>
// opened on line 3 (truncated?)".
std::string checkTopologyXml(const std::string& text);

}  // namespace weft
