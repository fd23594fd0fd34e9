// Direct schedules for ranks that can read and write each other's buffers (one host, buffers
// from ncclMemAlloc, or device memory mapped through CUDA IPC): every rank moves its own part
// of the result straight between the peers' buffers, with no bounce buffer in between. The
// call's entry handshake (runtime/exec/direct_path.h) is the barrier before: every peer has
// entered the call, so its buffers are ready. Notify/WaitNotify after keep a rank's buffers
// until every peer that reads or writes them is done.
//
// - All-reduce: rank r sums chunk r straight out of every rank's send buffer and writes the
//   result straight into every rank's receive buffer; each rank reads the whole buffer once and
//   writes it once. With two ranks the sum and both writes are one pass (Step::dst2).
// - All-gather: rank r writes its block into block r of every rank's receive buffer, its own and
//   the first peer's in one pass (Step::dst2).
// - Reduce-scatter: rank r sums block r of every rank's send buffer into its receive buffer.
// - Broadcast: every rank copies the root's send buffer into its receive buffer; only the root
//   waits for the others after.
// - Reduce: rank r sums chunk r of every rank's send buffer into chunk r of the root's receive
//   buffer, so the work is spread over the ranks as the all-reduce's is.
// - All-to-all: rank r writes block q of its send buffer into block r of rank q's receive
//   buffer. This one needs each rank's buffers apart: in place, a peer could overwrite a block
//   before its owner sent it. A rank that is in place says so in the handshake, and every rank
//   takes the selected algorithm (runtime/exec/direct_path.h).
// - Gather: rank r writes its send buffer into block r of the root's receive buffer; only the
//   root waits for the others after.
// - Scatter: rank r copies block r of the root's send buffer into its receive buffer; only the
//   root waits for the others after.
//
// Apart from the all-to-all, no schedule depends on the call being in place: a Copy onto itself
// moves nothing, and each reduction reads and writes the same elements. So a plan also runs on
// buffers that do not alias although the caller's did (the own device buffers of
// runtime/exec/direct_path.h); those are always apart, so the all-to-all runs there in place too.
#pragma once

#include <cstddef>

#include "algorithms/schedule.h"

namespace weft {

struct DirectParams {
  // NCCL's count: per rank for all-gather and gather, per rank's result for reduce-scatter and
  // scatter, per pair of ranks for all-to-all
  size_t count = 0;
  size_t elementSize = 0;
  int rank = 0;
  int nranks = 1;
  int root = 0;  // broadcast, reduce, gather, scatter
  bool average = false;
};

Schedule buildDirectAllReduce(const DirectParams& params);
Schedule buildDirectAllGather(const DirectParams& params);
Schedule buildDirectReduceScatter(const DirectParams& params);
Schedule buildDirectBroadcast(const DirectParams& params);
Schedule buildDirectReduce(const DirectParams& params);
Schedule buildDirectAllToAll(const DirectParams& params);
Schedule buildDirectGather(const DirectParams& params);
Schedule buildDirectScatter(const DirectParams& params);

}  // namespace weft
