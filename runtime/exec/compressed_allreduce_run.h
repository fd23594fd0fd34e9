// Whether an all-reduce runs compressed (weftAllReduceCompressed, or WEFT_COMPRESSION for an
// eligible ncclAllReduce: sum or avg on float32/float16/bfloat16, at least min_bytes, more
// than one rank), and if so its prepared schedule, codec and error-feedback residual.
#pragma once

#include "nccl.h"
#include "runtime/exec/collective.h"
#include "runtime/exec/executor.h"

namespace weft {

struct CompressedRunSetup {
  const PreparedSchedule* plan = nullptr;  // null: run the call as usual (exactly)
  RunCodec codec;
};

ncclResult_t prepareCompressedAllReduce(const CollectiveCall& call, CompressedRunSetup* setup);
// Whether `call` asks for compression (then it takes no path that would run it exactly, except
// the one prepareCompressedAllReduce falls back to).
bool compressedAllReduceWanted(const CollectiveCall& call);

}  // namespace weft
