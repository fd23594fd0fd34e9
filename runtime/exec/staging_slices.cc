#include "runtime/exec/staging_slices.h"

#include <algorithm>
#include <cstddef>

#include "algorithms/algorithm.h"
#include "common/dtype.h"
#include "runtime/comm/communicator.h"
#include "runtime/exec/compressed_allreduce_run.h"

namespace weft {

namespace {

// Collectives cut into slices: those over contiguous elements of every buffer, and the
// all-gather and reduce-scatter, whose slice k is elements [k*s, (k+1)*s) of every rank's block,
// so that its blocks lie a whole block apart in one buffer (CollectiveCall::blockStride).
bool cutsIntoSlices(const CollectiveCall& call) {
  if (call.kind.isPointToPoint()) return false;
  switch (call.kind.collective()) {
    case Collective::AllReduce:
    case Collective::Broadcast:
    case Collective::Reduce:
    case Collective::AllGather:
    case Collective::ReduceScatter: return true;
    default: return false;
  }
}

// The bytes of `call` that a slice's size is measured against, and a slice of them:
// WEFT_STAGING_SLICE_BYTES a rank. Each slice is a collective of its own, whose start-up (a
// ring's 2(n-1) steps) grows with the rank count; a slice of n times a few MiB keeps each step's
// message large beside its latency. Of an all-gather or reduce-scatter, whose count is one
// rank's block, a slice is WEFT_STAGING_SLICE_BYTES of every block.
size_t sliceBytes(const CollectiveCall& call) {
  const size_t perRank = call.comm->agreed.stagingSliceBytes;
  return sizeCountsEveryRank(call.kind.collective()) ? perRank
                                                     : perRank * static_cast<size_t>(std::max(call.comm->nranks, 1));
}

// Elements a slice of `call`: at most kMostStagingSlices slices, of equal size but the last.
size_t sliceElements(const CollectiveCall& call) {
  const size_t bytes = call.count * dataTypeSize(call.datatype);
  const size_t slices = std::min(kMostStagingSlices, (bytes + sliceBytes(call) - 1) / sliceBytes(call));
  return (call.count + slices - 1) / slices;
}

// `pointer` advanced by `bytes`; null stays null (a buffer NCCL ignores on this rank).
const void* advanced(const void* pointer, size_t bytes) {
  return pointer ? static_cast<const char*>(pointer) + bytes : nullptr;
}
void* advanced(void* pointer, size_t bytes) { return pointer ? static_cast<char*>(pointer) + bytes : nullptr; }

}  // namespace

size_t stagingSliceCount(const CollectiveCall& call) {
  const ncclComm* comm = call.comm;
  // The cheap tests first: every call asks.
  if (comm->agreed.stagingSliceBytes == 0 || call.count * dataTypeSize(call.datatype) < 2 * sliceBytes(call)) return 1;
  // A PreMulSum operator's scalar may be device memory, staged with the whole call; the
  // compressed all-reduce has its own slices.
  if (!cutsIntoSlices(call) || call.op >= ncclNumOps || compressedAllReduceWanted(call)) return 1;
  if (allRanksOnOneHost(comm) || ranksWithADevice(comm) == 0) return 1;
  const size_t elements = sliceElements(call);
  return (call.count + elements - 1) / elements;
}

const std::vector<CollectiveCall>& cutIntoStagingSlices(const std::vector<CollectiveCall>& calls,
                                                        std::vector<CollectiveCall>* storage) {
  storage->clear();
  bool cut = false;
  for (size_t i = 0; i < calls.size(); ++i) {
    const CollectiveCall& call = calls[i];
    const size_t slices = stagingSliceCount(call);
    if (slices == 1) {
      if (cut) storage->push_back(call);
      continue;
    }
    if (!cut) storage->assign(calls.begin(), calls.begin() + static_cast<std::ptrdiff_t>(i));  // whole, before it
    cut = true;
    const size_t elements = sliceElements(call);
    const size_t elementSize = dataTypeSize(call.datatype);
    for (size_t k = 0; k < slices; ++k) {
      CollectiveCall slice = call;
      const size_t first = k * elements;
      slice.count = std::min(elements, call.count - first);
      slice.sendbuff = advanced(call.sendbuff, first * elementSize);
      slice.recvbuff = advanced(call.recvbuff, first * elementSize);
      slice.stagingSlice = true;
      if (sizeCountsEveryRank(call.kind.collective())) slice.blockStride = call.count;  // AG, RS
      storage->push_back(slice);
    }
  }
  return cut ? *storage : calls;
}

}  // namespace weft
