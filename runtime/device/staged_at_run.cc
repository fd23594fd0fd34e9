#include "runtime/device/staged_at_run.h"

#include "algorithms/algorithm.h"
#include "common/dtype.h"
#include "common/status.h"
#include "runtime/comm/communicator.h"
#include "runtime/device/stream_queue.h"

namespace weft {

ncclResult_t deviceWorkOf(ncclComm* comm, const DeviceWork** out) {
  StreamQueue* queue = nullptr;
  {
    std::lock_guard<std::mutex> lock(comm->device.mutex);
    queue = comm->device.queue.get();
  }
  if (!queue) return fail(ncclInternalError, "rank %d: a device call ran without its stream queue", comm->rank);
  return queue->deviceWork(out);
}

ncclResult_t stageAtRun(const CollectiveCall& call, RunBuffers* buffers) {
  DeviceBuffers& device = *call.deviceBuffers;
  const DeviceWork* work = nullptr;
  WEFT_CHECK(deviceWorkOf(call.comm, &work));
  // In place, the two places overlap as the caller's buffers do (the batch's layout keeps it).
  if (bufferSpans(call).send) {
    WEFT_CHECK(copyInputToContiguous(*work, call, device.stagingSend));
    WEFT_CHECK(work->api->synchronizeStream(work->stream));
  }
  device.stagedAtRun = true;
  *buffers = RunBuffers{device.stagingSend, device.stagingRecv, nullptr};
  return ncclSuccess;
}

namespace {

// The bytes of one rank's block where `call` is a strided slice or piece and the buffer `holds`
// rank blocks on this rank (runtime/exec/staging_slices.h); 0 otherwise.
size_t stridedBlockBytes(const CollectiveCall& call, bool (*holds)(Collective)) {
  if (!call.blockStride || call.kind.isPointToPoint() || !holds(call.kind.collective())) return 0;
  const Collective collective = call.kind.collective();
  const bool rooted = collective == Collective::Gather || collective == Collective::Scatter;
  return rooted && call.comm->rank != call.root ? 0 : call.count * dataTypeSize(call.datatype);
}

}  // namespace

ncclResult_t copyInputToContiguous(const DeviceWork& work, const CollectiveCall& call, char* place) {
  if (const size_t block = stridedBlockBytes(call, sendHoldsRankBlocks))
    return work.api->copy2DAsync(place, block, call.sendbuff, blockStrideBytes(call), block,
                                 static_cast<size_t>(call.comm->nranks), work.stream);
  const size_t bytes = bufferSpans(call).send;
  return bytes ? work.api->copyAsync(place, call.sendbuff, bytes, work.stream) : ncclSuccess;
}

ncclResult_t copyResultFromContiguous(const DeviceWork& work, const CollectiveCall& call, const char* place) {
  if (const size_t block = stridedBlockBytes(call, recvHoldsRankBlocks))
    return work.api->copy2DAsync(call.recvbuff, blockStrideBytes(call), place, block, block,
                                 static_cast<size_t>(call.comm->nranks), work.stream);
  const size_t bytes = bufferSpans(call).recv;
  return bytes ? work.api->copyAsync(call.recvbuff, place, bytes, work.stream) : ncclSuccess;
}

}  // namespace weft
