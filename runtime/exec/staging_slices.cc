#include "runtime/exec/staging_slices.h"

#include <algorithm>
#include <cstddef>

#include "algorithms/algorithm.h"
#include "common/dtype.h"
#include "runtime/comm/communicator.h"
#include "runtime/exec/compressed_allreduce_run.h"
#include "runtime/exec/direct_path.h"

namespace weft {

namespace {

// Every collective is cut: those over contiguous elements of every buffer into consecutive
// elements, those of a block per rank (all-gather, reduce-scatter, all-to-all, gather, scatter)
// into elements [k*s, (k+1)*s) of every block, so that a slice's blocks lie a whole block apart
// (CollectiveCall::blockStride). Sends and receives are not.
bool cutsIntoSlices(const CollectiveCall& call) { return !call.kind.isPointToPoint(); }

// The bytes of `call` that a slice's size is measured against, and a slice of them:
// WEFT_STAGING_SLICE_BYTES a rank. Each slice is a collective of its own, whose start-up (a
// ring's 2(n-1) steps) grows with the rank count; a slice of n times a few MiB keeps each step's
// message large beside its latency. Of a collective with a block per rank (whose count is one
// rank's block), a slice is WEFT_STAGING_SLICE_BYTES of every block.
size_t sliceBytes(const CollectiveCall& call) {
  const size_t perRank = call.comm->agreed.stagingSliceBytes;
  return sizeCountsEveryRank(call.kind.collective()) ? perRank
                                                     : perRank * static_cast<size_t>(std::max(call.comm->nranks, 1));
}

// How a call is cut: `pieces` calls of `elements` elements each (the last one fewer).
struct Cut {
  size_t elements = 0;
  size_t pieces = 1;
  bool ownBufferPieces = false;  // cut to fit the own device buffers (CollectiveCall::ownBufferPiece)
};

// `call` in pieces of at most `mostElements` elements, all of equal size but the last, each a
// whole number of 4 KiB where that fits: every piece then starts as aligned as the call, for the
// device's wide copies and kernels.
Cut evenPieces(const CollectiveCall& call, size_t mostElements) {
  const size_t align = std::max<size_t>(4096 / dataTypeSize(call.datatype), 1);
  if (mostElements >= align) mostElements = mostElements / align * align;
  const size_t pieces = (call.count + mostElements - 1) / mostElements;
  size_t elements = (call.count + pieces - 1) / pieces;
  // Rounding up keeps the number of pieces (at most mostElements each); only the last is smaller.
  if (mostElements >= align) elements = std::min((elements + align - 1) / align * align, mostElements);
  return {elements, (call.count + elements - 1) / elements};
}

// Between hosts, where some rank has a device: slices for pipelined staging, at most
// kMostStagingSlices of them.
Cut stagingCut(const CollectiveCall& call) {
  const ncclComm* comm = call.comm;
  const size_t bytes = call.count * dataTypeSize(call.datatype);
  // The cheap tests first: every call asks.
  if (comm->agreed.stagingSliceBytes == 0 || bytes < 2 * sliceBytes(call)) return {call.count, 1};
  if (allRanksOnOneHost(comm) || ranksWithADevice(comm) == 0) return {call.count, 1};
  const size_t slices = std::min(kMostStagingSlices, (bytes + sliceBytes(call) - 1) / sliceBytes(call));
  const size_t elements = (call.count + slices - 1) / slices;
  return {elements, (call.count + elements - 1) / elements};
}

// On one host, where every rank has a device: a call the ranks take direct whose larger buffer
// is larger than the communicator's own device buffers may be, in pieces that fit them. A rank
// whose memory cannot be exported (cudaMalloc's) then goes direct through them piece by piece
// instead of staging the whole call through host memory; a rank whose memory can be exported
// goes direct on its own buffers as before, a little handshake more per piece.
Cut ownBufferCut(const CollectiveCall& call) {
  const ncclComm* comm = call.comm;
  const size_t elementSize = dataTypeSize(call.datatype);
  const size_t blocks = sizeCountsEveryRank(call.kind.collective()) ? static_cast<size_t>(comm->nranks) : 1;
  const size_t most = comm->agreed.ownDeviceBufferBytes;  // 0 only in tests' hand-made communicators
  if (most == 0 || call.count * elementSize * blocks <= most) return {call.count, 1};
  // (Never a one-shot all-reduce: that is at most 16 KiB, the own buffers at least 64 KiB.)
  if (!allRanksOnOneHost(comm) || ranksWithADevice(comm) < comm->nranks || !directPathEligible(call))
    return {call.count, 1};
  Cut cut = evenPieces(call, std::max<size_t>(most / (elementSize * blocks), 1));
  cut.ownBufferPieces = true;
  return cut;
}

Cut cutOf(const CollectiveCall& call) {
  // A PreMulSum operator's scalar may be device memory, staged with the whole call; the
  // compressed all-reduce has its own slices.
  if (!cutsIntoSlices(call) || call.op >= ncclNumOps || compressedAllReduceWanted(call)) return {call.count, 1};
  const Cut staging = stagingCut(call);
  return staging.pieces > 1 ? staging : ownBufferCut(call);
}

// `pointer` advanced by `bytes`; null stays null (a buffer NCCL ignores on this rank).
const void* advanced(const void* pointer, size_t bytes) {
  return pointer ? static_cast<const char*>(pointer) + bytes : nullptr;
}
void* advanced(void* pointer, size_t bytes) { return pointer ? static_cast<char*>(pointer) + bytes : nullptr; }

}  // namespace

size_t stagingSliceCount(const CollectiveCall& call) { return cutOf(call).pieces; }

const std::vector<CollectiveCall>& cutIntoStagingSlices(const std::vector<CollectiveCall>& calls,
                                                        std::vector<CollectiveCall>* storage) {
  storage->clear();
  bool anyCut = false;
  for (size_t i = 0; i < calls.size(); ++i) {
    const CollectiveCall& call = calls[i];
    const Cut cut = cutOf(call);
    if (cut.pieces == 1) {
      if (anyCut) storage->push_back(call);
      continue;
    }
    if (!anyCut) storage->assign(calls.begin(), calls.begin() + static_cast<std::ptrdiff_t>(i));  // whole, before it
    anyCut = true;
    const size_t elements = cut.elements;
    const size_t elementSize = dataTypeSize(call.datatype);
    for (size_t k = 0; k < cut.pieces; ++k) {
      CollectiveCall slice = call;
      const size_t first = k * elements;
      slice.count = std::min(elements, call.count - first);
      slice.sendbuff = advanced(call.sendbuff, first * elementSize);
      slice.recvbuff = advanced(call.recvbuff, first * elementSize);
      slice.stagingSlice = true;
      slice.ownBufferPiece = cut.ownBufferPieces;
      if (sizeCountsEveryRank(call.kind.collective())) slice.blockStride = call.count;  // a block per rank
      storage->push_back(slice);
    }
  }
  return anyCut ? *storage : calls;
}

}  // namespace weft
