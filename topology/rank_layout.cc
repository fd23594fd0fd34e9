#include "topology/rank_layout.h"

#include <algorithm>
#include <map>

namespace weft {

RankLayout computeRankLayout(const std::vector<RankPlacement>& ranks) {
  RankLayout L;
  L.nRanks = static_cast<int>(ranks.size());
  L.nodeOf.assign(ranks.size(), -1);
  L.localRank.assign(ranks.size(), -1);
  L.localSize.assign(ranks.size(), 0);
  L.ranksSharingGpu.assign(ranks.size(), {});
  std::map<std::string, int> nodeIndex;
  for (int r = 0; r < L.nRanks; ++r) {
    auto [it, inserted] = nodeIndex.emplace(ranks[r].hostId, static_cast<int>(L.nodes.size()));
    if (inserted) {
      L.nodeHosts.push_back(ranks[r].hostId);
      L.nodes.emplace_back();
    }
    L.nodeOf[r] = it->second;
    L.localRank[r] = static_cast<int>(L.nodes[it->second].size());
    L.nodes[it->second].push_back(r);
  }
  size_t maxLocal = 0;
  for (const std::vector<int>& node : L.nodes) {
    maxLocal = std::max(maxLocal, node.size());
    if (node.size() != L.nodes.front().size()) L.uniformLocalSize = false;
    for (int r : node) {
      L.localSize[r] = static_cast<int>(node.size());
      L.ringOrder.push_back(r);
    }
  }
  // GPU sharing: same host and the same GPU (bus id when known, else the CUDA index).
  for (const std::vector<int>& node : L.nodes) {
    for (int r : node) {
      const RankPlacement& a = ranks[r];
      if (a.gpuIndex < 0 && a.gpuBusId.empty()) continue;
      for (int s : node) {
        const RankPlacement& b = ranks[s];
        bool same = !a.gpuBusId.empty() && !b.gpuBusId.empty() ? a.gpuBusId == b.gpuBusId
                                                               : (a.gpuIndex >= 0 && a.gpuIndex == b.gpuIndex);
        if (same) L.ranksSharingGpu[r].push_back(s);
      }
    }
  }
  L.rails.assign(maxLocal, {});
  for (const std::vector<int>& node : L.nodes)
    for (size_t l = 0; l < node.size(); ++l) L.rails[l].push_back(node[l]);
  return L;
}

std::string describeRankLayout(const RankLayout& L) {
  std::string s = std::to_string(L.nNodes()) + (L.nNodes() == 1 ? " node" : " nodes");
  if (L.uniformLocalSize && !L.nodes.empty()) {
    s += " x " + std::to_string(L.nodes.front().size()) + " ranks";
  } else {
    s += " (";
    for (size_t i = 0; i < L.nodes.size(); ++i) s += (i ? "+" : "") + std::to_string(L.nodes[i].size());
    s += " ranks)";
  }
  s += "; ring";
  for (int r : L.ringOrder) s += " " + std::to_string(r);
  return s;
}

}  // namespace weft
