// weft-topo: prints the topology weft sees (discovered through hwloc, or loaded from a file) as
// a tree and a link table, or as JSON; dumps it as hwloc XML.
//
//   weft-topo                      discover this machine, print tree + links
//   weft-topo --xml FILE           load FILE (hwloc XML, or a synthetic description) instead
//   weft-topo --synthetic "pack:2 core:4 pu:2"
//   weft-topo --dump FILE          also write the model as XML (lstopo -i FILE reads it)
//   weft-topo --json               JSON instead of text
//   weft-topo --links / --tree     only one of the two text parts
// WEFT_TOPO_FILE / NCCL_TOPO_FILE and WEFT_TOPO_DUMP_FILE / NCCL_TOPO_DUMP_FILE work as in the library.
#include <cstdio>
#include <cstring>
#include <string>

#include "common/status.h"
#include "topology/topology_loader.h"
#include "topology/topology_print.h"
#include "topology/topology_xml.h"

namespace {

void usage(FILE* to) {
  std::fprintf(to,
               "usage: weft-topo [--xml FILE | --synthetic DESC] [--dump FILE] [--json] [--tree | --links]\n"
               "  --xml FILE        load an hwloc XML topology (or a file with a synthetic description)\n"
               "  --synthetic DESC  load an hwloc synthetic description, e.g. \"pack:2 numa:1 core:8 pu:2\"\n"
               "  --dump FILE       write the model as hwloc XML with weft's attributes\n"
               "  --json            print JSON (for scripts) instead of the tree and link table\n"
               "  --tree, --links   print only the tree, or only the link table\n"
               "Without --xml/--synthetic: WEFT_TOPO_FILE or NCCL_TOPO_FILE when set, else hwloc discovery.\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::string xml, synthetic, dump;
  bool asJson = false, onlyTree = false, onlyLinks = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](std::string* into) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "weft-topo: %s needs a value\n", a.c_str());
        return false;
      }
      *into = argv[++i];
      return true;
    };
    if (a == "--xml") {
      if (!value(&xml)) return 2;
    } else if (a == "--synthetic") {
      if (!value(&synthetic)) return 2;
    } else if (a == "--dump") {
      if (!value(&dump)) return 2;
    } else if (a == "--json") {
      asJson = true;
    } else if (a == "--tree") {
      onlyTree = true;
    } else if (a == "--links") {
      onlyLinks = true;
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else {
      std::fprintf(stderr, "weft-topo: unknown argument %s\n", a.c_str());
      usage(stderr);
      return 2;
    }
  }
  weft::TopologyModel model;
  ncclResult_t r;
  if (!xml.empty())
    r = weft::loadTopologyFile(xml, &model);
  else if (!synthetic.empty())
    r = weft::loadTopologySynthetic(synthetic, &model);
  else
    r = weft::loadTopology(&model);
  if (r != ncclSuccess) {
    std::fprintf(stderr, "weft-topo: %s\n", weft::lastErrorMessage().c_str());
    return 1;
  }
  if (!dump.empty() && weft::writeTopologyXml(model, dump) != ncclSuccess) {
    std::fprintf(stderr, "weft-topo: %s\n", weft::lastErrorMessage().c_str());
    return 1;
  }
  if (asJson) {
    std::fputs(weft::topologyToJson(model).c_str(), stdout);
  } else {
    if (!onlyLinks) std::fputs(weft::formatTopologyTree(model).c_str(), stdout);
    if (!onlyTree && !onlyLinks) std::fputs("\n", stdout);
    if (!onlyTree) std::fputs(weft::formatLinkTable(model).c_str(), stdout);
  }
  return 0;
}
