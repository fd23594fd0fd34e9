#include "topology/topology_xml.h"

#include <hwloc.h>

#include <unistd.h>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "common/safe_file.h"
#include "common/status.h"
#include "topology/hwloc_model_builder.h"

namespace weft {
namespace {

constexpr size_t kMaxTopologyFileBytes = 64u << 20;

bool isNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.' || c == ':';
}

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string at(int line) { return "line " + std::to_string(line) + ": "; }

// hwloc's bitmap syntax: comma-separated 32-bit words, each "0x" and 1 to 8 hex digits or
// empty (zero) between two others, the first possibly "0xf...f" (an infinite set). hwloc 2.9 asserts on anything else
// (found by tests/fuzz/fuzz_topology_xml), so it is checked before hwloc reads it.
bool isHwlocBitmap(const std::string& value) {
  if (value == "0xf...f") return true;
  size_t start = 0;
  if (value.compare(0, 8, "0xf...f,") == 0) start = 8;
  for (;;) {
    size_t end = value.find(',', start);
    const std::string word = value.substr(start, end == std::string::npos ? std::string::npos : end - start);
    const bool middle = start > 0 && end != std::string::npos;
    if (word.empty() && middle) {  // hwloc writes runs of zero words as empty ones: "0xff,,,0x0"
      start = end + 1;
      continue;
    }
    if (word.size() < 3 || word.size() > 10 || word[0] != '0' || word[1] != 'x') return false;
    for (size_t k = 2; k < word.size(); ++k)
      if (!std::isxdigit(static_cast<unsigned char>(word[k]))) return false;
    if (end == std::string::npos) return true;
    start = end + 1;
  }
}

ncclResult_t loadXmlIntoHwloc(const std::string& text, const std::string& origin, const std::string& source,
                              TopologyModel* out) {
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0)
    return fail(ncclSystemError, "hwloc_topology_init failed: %s", std::strerror(errno));
  hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_IMPORT_SUPPORT);
  hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL);
  hwloc_topology_set_icache_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL);
  if (hwloc_topology_set_xmlbuffer(topo, text.c_str(), static_cast<int>(text.size() + 1)) != 0 ||
      hwloc_topology_load(topo) != 0) {
    int err = errno;
    hwloc_topology_destroy(topo);
    return fail(ncclInvalidArgument,
                "topology file %s: hwloc refused it as a topology (%s); check the cpuset, nodeset and "
                "gp_index attributes (`lstopo -i %s` shows hwloc's own diagnostics with HWLOC_XML_VERBOSE=1)",
                origin.c_str(), std::strerror(err), origin.c_str());
  }
  ncclResult_t result = buildModelFromHwloc(topo, source, "topology file " + origin, out);
  hwloc_topology_destroy(topo);
  return result;
}

}  // namespace

std::string checkTopologyXml(const std::string& text) {
  size_t i = 0, n = text.size();
  int line = 1;
  std::vector<std::pair<std::string, int>> open;  // element name, line
  std::string root;
  bool rootClosed = false;
  auto advance = [&](size_t to) {
    for (; i < to && i < n; ++i)
      if (text[i] == '\n') ++line;
  };
  auto skipTo = [&](const char* end) -> bool {
    size_t p = text.find(end, i);
    if (p == std::string::npos) return false;
    advance(p + std::strlen(end));
    return true;
  };
  while (i < n) {
    char c = text[i];
    if (c != '<') {
      if (!isSpace(c) && (open.empty())) {
        return at(line) + (rootClosed ? "text after the end of the root element"
                                      : "text before the first element (not an XML file?)");
      }
      if (c == '\n') ++line;
      ++i;
      continue;
    }
    int startLine = line;
    if (text.compare(i, 4, "<!--") == 0) {
      if (!skipTo("-->")) return at(startLine) + "comment never closed (file truncated?)";
      continue;
    }
    if (text.compare(i, 2, "<?") == 0) {
      if (!skipTo("?>")) return at(startLine) + "<? ... ?> never closed (file truncated?)";
      continue;
    }
    if (text.compare(i, 2, "<!") == 0) {
      if (!skipTo(">")) return at(startLine) + "<! ... > never closed (file truncated?)";
      continue;
    }
    bool closing = i + 1 < n && text[i + 1] == '/';
    advance(i + (closing ? 2 : 1));
    size_t nameStart = i;
    while (i < n && isNameChar(text[i])) ++i;
    std::string name = text.substr(nameStart, i - nameStart);
    if (i >= n) return at(startLine) + "the file ends inside a tag (truncated?)";
    if (name.empty()) return at(line) + "'<' not followed by an element name";
    if (closing) {
      while (i < n && isSpace(text[i])) advance(i + 1);
      if (i >= n) return at(startLine) + "the file ends inside </" + name + "> (truncated?)";
      if (text[i] != '>') return at(line) + "unexpected character in </" + name + ">";
      ++i;
      if (open.empty()) return at(startLine) + "</" + name + "> closes nothing";
      if (open.back().first != name)
        return at(startLine) + "</" + name + "> closes <" + open.back().first + "> opened on line " +
               std::to_string(open.back().second);
      open.pop_back();
      if (open.empty()) rootClosed = true;
      continue;
    }
    if (rootClosed || (open.empty() && !root.empty())) return at(startLine) + "a second root element <" + name + ">";
    // Attributes.
    bool selfClosing = false;
    std::vector<std::pair<std::string, std::string>> attributes;  // name, value
    for (;;) {
      while (i < n && isSpace(text[i])) advance(i + 1);
      if (i >= n) return at(startLine) + "the file ends inside <" + name + "> (truncated?)";
      if (text[i] == '>') {
        ++i;
        break;
      }
      if (text[i] == '/') {
        if (i + 1 >= n) return at(startLine) + "the file ends inside <" + name + "> (truncated?)";
        if (text[i + 1] != '>') return at(line) + "'/' not followed by '>' in <" + name + ">";
        i += 2;
        selfClosing = true;
        break;
      }
      size_t attrStart = i;
      while (i < n && isNameChar(text[i])) ++i;
      if (i == attrStart) return at(line) + "unexpected character '" + std::string(1, text[i]) + "' in <" + name + ">";
      std::string attr = text.substr(attrStart, i - attrStart);
      while (i < n && isSpace(text[i])) advance(i + 1);
      if (i >= n) return at(startLine) + "the file ends inside <" + name + "> (truncated?)";
      if (text[i] != '=') return at(line) + "attribute " + attr + " of <" + name + "> has no value";
      ++i;
      while (i < n && isSpace(text[i])) advance(i + 1);
      if (i >= n) return at(startLine) + "the file ends inside <" + name + "> (truncated?)";
      char quote = text[i];
      if (quote != '"' && quote != '\'') return at(line) + "value of attribute " + attr + " is not quoted";
      size_t endQuote = text.find(quote, i + 1);
      if (endQuote == std::string::npos)
        return at(line) + "value of attribute " + attr + " never ends (file truncated?)";
      if (text.find('<', i + 1) < endQuote) return at(line) + "'<' inside the value of attribute " + attr;
      attributes.emplace_back(attr, text.substr(i + 1, endQuote - i - 1));
      if (attr.size() >= 3 && attr.compare(attr.size() - 3, 3, "set") == 0 &&
          !isHwlocBitmap(text.substr(i + 1, endQuote - i - 1)))
        return at(line) + "attribute " + attr + " of <" + name + "> is not an hwloc bitmap (0x1f,0x00000003...)";
      advance(endQuote + 1);
    }
    if (name == "object") {
      // hwloc 2.9 dereferences a missing complete set of an object that has the set (found by
      // tests/fuzz/fuzz_topology_xml): refused here, before hwloc sees it.
      auto value = [&](const char* a) -> const std::string* {
        for (const auto& [attrName, attrValue] : attributes)
          if (attrName == a) return &attrValue;
        return nullptr;
      };
      auto has = [&](const char* a) { return value(a) != nullptr; };
      for (const char* set : {"cpuset", "nodeset"}) {
        const std::string complete = std::string("complete_") + set;
        if (has(set) != has(complete.c_str()))
          return at(startLine) + "<object> has " + (has(set) ? set : complete) + " without " +
                 (has(set) ? complete : std::string(set)) + " (hwloc needs both)";
      }
      // A PU or NUMA node without an index becomes bit 2^32-1 of every set above it, which
      // hwloc then spends minutes and a gigabyte on; a real index is far below 2^20.
      // The type as hwloc reads it: case-insensitive, with aliases ("numa", "Node", "pu").
      const std::string* type = value("type");
      hwloc_obj_type_t hwlocType;
      if (type && hwloc_type_sscanf(type->c_str(), &hwlocType, nullptr, 0) == 0 &&
          (hwlocType == HWLOC_OBJ_PU || hwlocType == HWLOC_OBJ_NUMANODE)) {
        const std::string* index = value("os_index");
        if (!index || index->empty() || index->size() > 7 ||
            index->find_first_not_of("0123456789") != std::string::npos || std::stol(*index) >= (1L << 20))
          return at(startLine) + "<object type=\"" + *type + "\"> needs an os_index below 1048576";
      }
    }
    if (root.empty()) {
      root = name;
      if (root == "system")
        return "root element is <system>: this is NCCL's own topology format, which weft does not read; "
               "give an hwloc XML topology (lstopo --of xml, or a weft dump)";
      if (root != "topology") return "root element is <" + root + ">, expected <topology> (an hwloc XML topology)";
      // hwloc imports 1.x files (no version) through fix-ups that dereference sets the file
      // may lack (found by tests/fuzz/fuzz_topology_xml); hwloc 2 has written 2.x since 2017.
      std::string version;
      for (const auto& [attrName, attrValue] : attributes)
        if (attrName == "version") version = attrValue;
      if (version.size() < 3 || version.compare(0, 2, "2.") != 0 ||
          version.find_first_not_of("0123456789", 2) != std::string::npos)
        return at(startLine) + "<topology> " +
               (version.empty() ? std::string("has no version: an hwloc 1.x file")
                                : "has version \"" + version + "\", not 2.x") +
               "; weft reads hwloc 2 XML (re-export it with hwloc 2's `lstopo --of xml`)";
    }
    if (!selfClosing)
      open.emplace_back(name, startLine);
    else if (open.empty())
      rootClosed = true;
  }
  if (root.empty()) return "no XML element in it (empty file?)";
  if (!open.empty())
    return "the file ends inside <" + open.back().first + "> opened on line " + std::to_string(open.back().second) +
           " (truncated?)";
  return "";
}

ncclResult_t loadTopologyXmlText(const std::string& text, const std::string& origin, TopologyModel* out) {
  std::string problem = checkTopologyXml(text);
  if (!problem.empty()) return fail(ncclInvalidArgument, "topology file %s: %s", origin.c_str(), problem.c_str());
  return loadXmlIntoHwloc(text, origin, "xml:" + origin, out);
}

ncclResult_t loadTopologySynthetic(const std::string& description, TopologyModel* out) {
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0)
    return fail(ncclSystemError, "hwloc_topology_init failed: %s", std::strerror(errno));
  if (hwloc_topology_set_synthetic(topo, description.c_str()) != 0 || hwloc_topology_load(topo) != 0) {
    hwloc_topology_destroy(topo);
    return fail(ncclInvalidArgument,
                "synthetic topology \"%s\": hwloc refused the description (expected e.g. "
                "\"pack:2 numa:1 core:8 pu:2\")",
                description.c_str());
  }
  ncclResult_t result = buildModelFromHwloc(topo, "synthetic:" + description, "synthetic topology", out);
  hwloc_topology_destroy(topo);
  return result;
}

ncclResult_t loadTopologyFile(const std::string& path, TopologyModel* out) {
  static const char kPrefix[] = "synthetic:";
  if (path.rfind(kPrefix, 0) == 0) return loadTopologySynthetic(path.substr(sizeof kPrefix - 1), out);
  std::string text;
  WEFT_CHECK(readRegularFile(path, kMaxTopologyFileBytes, "topology file", &text));
  if (text.find('\0') != std::string::npos)
    return fail(ncclInvalidArgument, "topology file %s: contains a NUL byte (not a text file)", path.c_str());
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return fail(ncclInvalidArgument, "topology file %s: the file is empty", path.c_str());
  if (text[first] != '<') {
    // A synthetic description: the first non-comment line.
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
      size_t s = line.find_first_not_of(" \t\r");
      if (s == std::string::npos || line[s] == '#') continue;
      size_t e = line.find_last_not_of(" \t\r");
      ncclResult_t r = loadTopologySynthetic(line.substr(s, e - s + 1), out);
      if (r != ncclSuccess)
        return fail(r, "topology file %s: neither XML nor a synthetic description hwloc accepts (\"%s\")", path.c_str(),
                    line.substr(s, e - s + 1).c_str());
      out->source = "synthetic:" + path;
      return ncclSuccess;
    }
    return fail(ncclInvalidArgument, "topology file %s: only comments", path.c_str());
  }
  return loadTopologyXmlText(text, path, out);
}

ncclResult_t writeTopologyXml(const TopologyModel& model, const std::string& path) {
  if (model.xml.empty()) return fail(ncclInvalidArgument, "topology dump to %s: the model has no XML", path.c_str());
  WEFT_CHECK(replaceFile(path, model.xml, "topology dump"));
  return ncclSuccess;
}

}  // namespace weft
