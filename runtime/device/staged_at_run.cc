#include "runtime/device/staged_at_run.h"

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
  const size_t bytes = bufferSpans(call).send;
  if (bytes) {
    WEFT_CHECK(work->api->copyAsync(device.stagingSend, call.sendbuff, bytes, work->stream));
    WEFT_CHECK(work->api->synchronizeStream(work->stream));
  }
  device.stagedAtRun = true;
  *buffers = RunBuffers{device.stagingSend, device.stagingRecv, nullptr};
  return ncclSuccess;
}

}  // namespace weft
