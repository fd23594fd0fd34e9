#include "runtime/device/staged_at_run.h"

#include <algorithm>

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

// The bytes of one rank's block where `call` is a strided slice or piece of `collective` on a
// rank that has its strided buffer (the reduce-scatter's input, the all-gather's output, both of
// the all-to-all's, the root's of a gather or scatter); 0 otherwise.
size_t stridedBlockBytes(const CollectiveCall& call, Collective collective) {
  if (!call.blockStride || call.kind.isPointToPoint() || call.kind.collective() != collective) return 0;
  const bool rooted = collective == Collective::Gather || collective == Collective::Scatter;
  if (rooted && call.comm->rank != call.root) return 0;
  return call.count * dataTypeSize(call.datatype);
}

// The input's strided blocks, and the result's (0: not strided).
size_t stridedInputBlockBytes(const CollectiveCall& call) {
  return std::max({stridedBlockBytes(call, Collective::ReduceScatter), stridedBlockBytes(call, Collective::AllToAll),
                   stridedBlockBytes(call, Collective::Scatter)});
}
size_t stridedResultBlockBytes(const CollectiveCall& call) {
  return std::max({stridedBlockBytes(call, Collective::AllGather), stridedBlockBytes(call, Collective::AllToAll),
                   stridedBlockBytes(call, Collective::Gather)});
}

}  // namespace

ncclResult_t copyInputToContiguous(const DeviceWork& work, const CollectiveCall& call, char* place) {
  if (const size_t block = stridedInputBlockBytes(call))
    return work.api->copy2DAsync(place, block, call.sendbuff, blockStrideBytes(call), block,
                                 static_cast<size_t>(call.comm->nranks), work.stream);
  const size_t bytes = bufferSpans(call).send;
  return bytes ? work.api->copyAsync(place, call.sendbuff, bytes, work.stream) : ncclSuccess;
}

ncclResult_t copyResultFromContiguous(const DeviceWork& work, const CollectiveCall& call, const char* place) {
  if (const size_t block = stridedResultBlockBytes(call))
    return work.api->copy2DAsync(call.recvbuff, blockStrideBytes(call), place, block, block,
                                 static_cast<size_t>(call.comm->nranks), work.stream);
  const size_t bytes = bufferSpans(call).recv;
  return bytes ? work.api->copyAsync(call.recvbuff, place, bytes, work.stream) : ncclSuccess;
}

}  // namespace weft
