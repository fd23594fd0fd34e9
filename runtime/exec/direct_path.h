// Choosing the direct all-reduce: it needs every rank on one host and every rank's buffers in
// memory the others can map (ncclMemAlloc's host memory: weftMemAllocHost, or ncclMemAlloc
// without a GPU). Each rank knows only its own buffers, so before a
// large all-reduce the ranks exchange descriptors (a tiny schedule of its own), and every rank
// reaches the same verdict from the same table.
#pragma once

#include "runtime/exec/collective.h"
#include "runtime/exec/executor.h"
#include "transport/shm/shared_memory_pool.h"

namespace weft {

struct DirectDescriptor {
  uint32_t capable = 0;
  SharedBufferLocation send;
  SharedBufferLocation recv;
};

// Depends only on what every rank agrees on (the call's shape, the layout, the environment).
bool directPathEligible(const CollectiveCall& call);
// The descriptor-exchange run for `call`: fills this rank's descriptor and returns the plan and
// buffers to run.
ncclResult_t beginDirectHandshake(const CollectiveCall& call, const PreparedSchedule** plan, RunBuffers* buffers);
// After the exchange: *useDirect when every rank can be read directly; then maps the peers'
// buffers and returns them in `buffers`.
ncclResult_t concludeDirectHandshake(const CollectiveCall& call, bool* useDirect, RunBuffers* buffers);

}  // namespace weft
