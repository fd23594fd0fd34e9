// The one way weft opens hwloc on this machine (as opposed to a file or synthetic description):
// every live load gets the same component choices, so discovery and CPU binding see one machine.
#pragma once

#include <hwloc.h>

namespace weft {

// hwloc_topology_init plus weft's component choices; the caller sets filters, then loads.
// Returns hwloc's result (0 on success, -1 with errno set).
int initLiveHwlocTopology(hwloc_topology_t* topo);

}  // namespace weft
