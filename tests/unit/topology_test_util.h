// Shared by the topology tests: fixture paths, the answers a model gives (compared with a
// fixture's .expect file), small file helpers.
#pragma once

#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "topology/affinity.h"
#include "topology/rank_layout.h"
#include "topology/rank_placement.h"
#include "topology/topology_model.h"

namespace weft::testing {

inline std::string fixturePath(const std::string& name) { return std::string(WEFT_TOPO_FIXTURE_DIR) + "/" + name; }

inline std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void writeFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

inline std::string tempPath(const std::string& name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/weft_topo_test_" + std::to_string(::getpid()) + "_" + name;
}

template <typename T>
std::string joined(const std::vector<T>& v) {
  std::ostringstream s;
  for (size_t i = 0; i < v.size(); ++i) s << (i ? "," : "") << v[i];
  return s.str();
}

inline std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// key=value lines; '#' starts a comment.
inline std::map<std::string, std::string> readExpect(const std::string& path) {
  std::map<std::string, std::string> out;
  std::istringstream in(readFile(path));
  std::string line;
  while (std::getline(in, line)) {
    size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    auto trim = [](std::string s) {
      size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
      return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
    };
    out[trim(line.substr(0, eq))] = trim(line.substr(eq + 1));
  }
  return out;
}

// Two fake hosts of this machine: rank r on host "fake-host-<r%2>", GPU r/2 (one rank per GPU;
// without GPUs, `hostRanks` ranks per host).
inline std::vector<RankPlacement> twoFakeHosts(const TopologyModel& m, int hostRanks) {
  std::vector<RankPlacement> ranks;
  int perHost = m.gpus.empty() ? hostRanks : static_cast<int>(m.gpus.size());
  for (int r = 0; r < 2 * perHost; ++r) {
    std::string host = "fake-host-" + std::to_string(r % 2);
    ::setenv("WEFT_HOSTNAME", host.c_str(), 1);
    ranks.push_back(describeThisRank(m, m.gpus.empty() ? -1 : r / 2));
  }
  ::unsetenv("WEFT_HOSTNAME");
  return ranks;
}

inline void layoutAnswers(const RankLayout& L, const std::vector<RankPlacement>& ranks, const std::string& prefix,
                          std::map<std::string, std::string>* a) {
  (*a)[prefix + "nodes"] = std::to_string(L.nNodes());
  for (int n = 0; n < L.nNodes(); ++n) (*a)[prefix + "node." + std::to_string(n)] = joined(L.nodes[n]);
  (*a)[prefix + "local_rank"] = joined(L.localRank);
  (*a)[prefix + "local_size"] = joined(L.localSize);
  (*a)[prefix + "ring"] = joined(L.ringOrder);
  for (size_t l = 0; l < L.rails.size(); ++l) (*a)[prefix + "rail." + std::to_string(l)] = joined(L.rails[l]);
  std::vector<std::string> nics;
  for (const RankPlacement& r : ranks) nics.push_back(r.nicName.empty() ? "-" : r.nicName);
  (*a)[prefix + "nic"] = joined(nics);
  for (int r = 0; r < L.nRanks; ++r)
    (*a)[prefix + "sharing." + std::to_string(r)] = L.ranksSharingGpu[r].empty() ? "-" : joined(L.ranksSharingGpu[r]);
}

inline std::map<std::string, std::string> modelAnswers(const TopologyModel& m) {
  std::map<std::string, std::string> a;
  a["packages"] = std::to_string(m.packages);
  a["numa_nodes"] = std::to_string(m.numaNodes);
  a["cores"] = std::to_string(m.cores);
  a["pus"] = std::to_string(m.pus);
  a["gpus"] = std::to_string(m.gpus.size());
  a["nics"] = std::to_string(m.nics.size());
  a["nvswitch"] = m.nvSwitchNode >= 0 ? "yes" : "no";
  int interSocket = 0, pci = 0;
  for (const TopoLink& l : m.links) interSocket += l.type == LinkType::InterSocket;
  for (const TopoNode& n : m.nodes)
    pci += (n.type == TopoNodeType::PciDevice || n.type == TopoNodeType::Gpu || n.type == TopoNodeType::Nic) &&
           !n.busId.empty();
  a["inter_socket_links"] = std::to_string(interSocket);
  a["pci_devices"] = std::to_string(pci);
  for (const CacheLevelInfo& c : m.caches)
    a["cache.L" + std::to_string(c.level) + (c.kind == 'u' ? "" : std::string(1, c.kind))] = std::to_string(c.count);
  for (const GpuInfo& g : m.gpus) {
    std::string k = "gpu." + std::to_string(g.index) + ".";
    a[k + "busid"] = g.busId;
    a[k + "numa"] = std::to_string(g.numaNode);
    a[k + "nvlink_gbps"] = num(g.nvlinkGBps);
    std::vector<std::string> names;
    std::vector<int> near = nearestNics(m, g.index);
    for (int i : near) names.push_back(m.nics[i].name);
    a[k + "nearest_nics"] = names.empty() ? "-" : joined(names);
    if (!near.empty()) a[k + "nic_path"] = pathTypeName(pathType(m, g.node, m.nics[near[0]].node));
    for (const GpuInfo& h : m.gpus)
      if (h.index > g.index) {
        a["path." + std::to_string(g.index) + "." + std::to_string(h.index)] =
            pathTypeName(pathType(m, g.node, h.node));
        a["path_gbps." + std::to_string(g.index) + "." + std::to_string(h.index)] =
            num(pathBandwidthGBps(m, g.node, h.node));
      }
  }
  for (const NicInfo& n : m.nics) {
    std::string k = "nic." + n.name + ".";
    a[k + "speed_gbps"] = num(n.speedGbps);
    a[k + "numa"] = std::to_string(n.numaNode);
    a[k + "busid"] = n.busId.empty() ? "-" : n.busId;
  }
  std::vector<RankPlacement> ranks = twoFakeHosts(m, 4);
  layoutAnswers(computeRankLayout(ranks), ranks, "layout2.", &a);
  return a;
}

}  // namespace weft::testing
