#include "topology/cpu_binding.h"

#include <hwloc.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "common/log.h"
#include "common/settings.h"
#include "common/status.h"
#include "topology/hwloc_live_topology.h"

namespace weft {
namespace {

// A CPU-only topology of this machine, loaded once: binding needs one, discovery's (with I/O)
// is not kept around.
hwloc_topology_t liveTopology() {
  static hwloc_topology_t topo = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    hwloc_topology_t t;
    if (initLiveHwlocTopology(&t) != 0) return;
    if (hwloc_topology_load(t) != 0) {
      hwloc_topology_destroy(t);
      return;
    }
    topo = t;
  });
  return topo;
}

std::string toString(hwloc_const_bitmap_t set) {
  char* s = nullptr;
  if (hwloc_bitmap_asprintf(&s, set) < 0 || s == nullptr) return "";
  std::string out(s);
  std::free(s);
  return out;
}

}  // namespace

std::string currentCpuBinding() {
  hwloc_topology_t topo = liveTopology();
  if (topo == nullptr) return "";
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  std::string out;
  if (hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_THREAD) == 0 ||
      hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0)
    out = toString(set);
  hwloc_bitmap_free(set);
  return out;
}

bool threadBindingEnabled() { return settingBool(Setting::WeftBindThreads); }

ncclResult_t bindThreadNear(const std::string& deviceCpuset, bool* bound) {
  if (bound) *bound = false;
  if (!threadBindingEnabled() || deviceCpuset.empty()) return ncclSuccess;
  hwloc_topology_t topo = liveTopology();
  if (topo == nullptr) return fail(ncclSystemError, "cannot bind a thread: hwloc could not load this machine");
  hwloc_bitmap_t want = hwloc_bitmap_alloc();
  hwloc_bitmap_t allowed = hwloc_bitmap_alloc();
  ncclResult_t result = ncclSuccess;
  if (hwloc_bitmap_sscanf(want, deviceCpuset.c_str()) != 0) {
    result = fail(ncclInvalidArgument, "cannot bind a thread: CPU set \"%s\" does not parse", deviceCpuset.c_str());
  } else {
    // Stay inside the process's binding (a launcher may have narrowed it).
    if (hwloc_get_cpubind(topo, allowed, HWLOC_CPUBIND_PROCESS) != 0)
      hwloc_bitmap_copy(allowed, hwloc_topology_get_allowed_cpuset(topo));
    hwloc_bitmap_and(want, want, allowed);
    if (hwloc_bitmap_iszero(want)) {
      WEFT_INFO(kLogInit, "not binding: none of the CPUs %s near the device is allowed here", deviceCpuset.c_str());
    } else if (hwloc_set_cpubind(topo, want, HWLOC_CPUBIND_THREAD) != 0) {
      result = fail(ncclSystemError, "hwloc_set_cpubind(%s) failed: %s", toString(want).c_str(), std::strerror(errno));
    } else {
      WEFT_INFO(kLogInit, "thread bound to CPUs %s", toString(want).c_str());
      if (bound) *bound = true;
    }
  }
  hwloc_bitmap_free(want);
  hwloc_bitmap_free(allowed);
  return result;
}

}  // namespace weft
