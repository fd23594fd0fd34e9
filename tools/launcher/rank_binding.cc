#include "tools/launcher/rank_binding.h"

#include <hwloc.h>

#include <cerrno>
#include <cstring>

#include "topology/hwloc_live_topology.h"

namespace weft::launcher {

bool parseBindPolicy(const std::string& text, BindPolicy* out) {
  if (text == "auto")
    *out = BindPolicy::Auto;
  else if (text == "core")
    *out = BindPolicy::Core;
  else if (text == "none")
    *out = BindPolicy::None;
  else
    return false;
  return true;
}

std::vector<std::vector<int>> planRankCpus(const std::vector<std::vector<int>>& cores, int nranks, BindPolicy policy,
                                           std::string* error) {
  const int coreCount = static_cast<int>(cores.size());
  if (policy == BindPolicy::None || nranks < 1 || coreCount == 0) return {};
  if (nranks > coreCount) {
    if (policy == BindPolicy::Core && error)
      *error = std::to_string(nranks) + " ranks but " + std::to_string(coreCount) +
               " usable cores (use --bind-to none to share them)";
    return {};
  }
  std::vector<std::vector<int>> plan(nranks);
  // Core: the first nranks cores, one each. Auto: every core, the remainder to the first ranks.
  const int perRank = policy == BindPolicy::Core ? 1 : coreCount / nranks;
  const int extra = policy == BindPolicy::Core ? 0 : coreCount % nranks;
  int next = 0;
  for (int rank = 0; rank < nranks; ++rank) {
    const int count = perRank + (rank < extra ? 1 : 0);
    for (int c = 0; c < count; ++c, ++next) plan[rank].insert(plan[rank].end(), cores[next].begin(), cores[next].end());
  }
  return plan;
}

std::vector<std::vector<int>> usableCores(std::string* error) {
  std::vector<std::vector<int>> cores;
  hwloc_topology_t topo = nullptr;
  hwloc_bitmap_t allowed = hwloc_bitmap_alloc();
  if (weft::initLiveHwlocTopology(&topo) != 0 || hwloc_topology_load(topo) != 0) {
    if (error) *error = std::string("hwloc cannot load this machine's topology: ") + std::strerror(errno);
  } else if (hwloc_get_cpubind(topo, allowed, HWLOC_CPUBIND_PROCESS) != 0) {
    if (error) *error = std::string("hwloc cannot read this process's CPU binding: ") + std::strerror(errno);
  } else {
    const int depth = hwloc_get_type_or_below_depth(topo, HWLOC_OBJ_CORE);
    for (unsigned i = 0; i < hwloc_get_nbobjs_by_depth(topo, depth); ++i) {
      hwloc_obj_t core = hwloc_get_obj_by_depth(topo, depth, i);
      std::vector<int> cpus;
      int cpu;
      hwloc_bitmap_foreach_begin(cpu, core->cpuset) {
        if (hwloc_bitmap_isset(allowed, static_cast<unsigned>(cpu))) cpus.push_back(cpu);
      }
      hwloc_bitmap_foreach_end();
      if (!cpus.empty()) cores.push_back(std::move(cpus));
    }
    if (cores.empty() && error) *error = "hwloc found no core this process may run on";
  }
  hwloc_bitmap_free(allowed);
  if (topo) hwloc_topology_destroy(topo);
  return cores;
}

}  // namespace weft::launcher
