#include "runtime/device/stream_dispatch.h"

#include <algorithm>

#include "algorithms/algorithm.h"
#include "common/dtype.h"
#include "common/status.h"
#include "runtime/comm/communicator.h"
#include "runtime/device/stream_queue.h"
#include "runtime/exec/call_schedule.h"
#include "runtime/exec/compressed_allreduce_run.h"
#include "runtime/exec/direct_path.h"
#include "runtime/exec/direct_point_to_point.h"
#include "runtime/exec/one_shot.h"
#include "runtime/exec/staging_slices.h"

namespace weft {

namespace {

bool onDevice(const void* pointer, size_t bytes) { return bytes && isDeviceMemory(pointer); }
bool streamOrdered(const void* pointer, size_t bytes) { return bytes && memoryKind(pointer) != MemoryKind::Host; }

// Device memory, and pinned host memory (read and written in place, but in stream order).
bool touchesStreamOrderedMemory(const CollectiveCall& call) {
  const BufferSpans spans = bufferSpans(call);
  return streamOrdered(call.sendbuff, spans.send) || streamOrdered(call.recvbuff, spans.recv) ||
         streamOrdered(call.residual, call.count * sizeof(float)) || streamOrdered(call.preMulSum.address, 8);
}

// Places each device buffer of the batch's calls in its staging area, keeping how the caller's
// buffers overlap (an in-place call stays in place), and records the copies in and out. With a
// null `base` it only measures: the total is the area's size.
size_t layOutStaging(const std::vector<const CollectiveCall*>& callers, StreamBatch* batch, char* base) {
  size_t used = 0;
  auto place = [&](size_t bytes) {
    const size_t at = (used + 63) & ~size_t{63};
    used = at + bytes;
    return base + at;
  };
  // A call left in place for the direct path gets its places but no copies: the progress thread
  // copies through them only if the ranks cannot all read each other's buffers
  // (runtime/device/staged_at_run.h).
  bool leftInPlace = false;
  auto copyIn = [&](cudaStream_t stream, void* staged, const void* caller, size_t bytes) {
    if (base && bytes && !leftInPlace) batch->copiesIn.push_back({stream, staged, caller, bytes});
  };
  auto copyOut = [&](cudaStream_t stream, void* caller, const void* staged, size_t bytes) {
    if (base && bytes && !leftInPlace) batch->copiesOut.push_back({stream, caller, staged, bytes});
  };
  for (size_t i = 0; i < callers.size(); ++i) {
    const CollectiveCall& caller = *callers[i];
    CollectiveCall& staged = batch->calls[i];
    DeviceBuffers* atRun = staged.deviceBuffers;
    leftInPlace = atRun != nullptr;
    const BufferSpans spans = bufferSpans(caller);
    const char* send = static_cast<const char*>(caller.sendbuff);
    char* recv = static_cast<char*>(caller.recvbuff);
    const bool sendOnDevice = onDevice(send, spans.send);
    const bool recvOnDevice = onDevice(recv, spans.recv);
    // Which buffers hold a block per rank: strided in a slice or piece.
    const bool sendBlocks = !caller.kind.isPointToPoint() && sendHoldsRankBlocks(caller.kind.collective());
    const bool recvBlocks = !caller.kind.isPointToPoint() && recvHoldsRankBlocks(caller.kind.collective());
    const bool exchanges = sendBlocks && recvBlocks, gathers = recvBlocks && !sendBlocks;
    if (caller.blockStride && ((sendBlocks && sendOnDevice) || (recvBlocks && recvOnDevice))) {
      // A strided slice or piece (runtime/exec/staging_slices.h): its blocks go into one
      // contiguous area, and the staged call is the contiguous call. A piece left in place for
      // the direct path keeps its stride: it is staged only if it cannot go direct, and then
      // copied as it runs (copyInputToContiguous), into the same places.
      const size_t block = caller.count * dataTypeSize(caller.datatype), stride = blockStrideBytes(caller);
      const size_t rank = static_cast<size_t>(caller.comm->rank), ranks = static_cast<size_t>(caller.comm->nranks);
      const bool inPlace = callIsInPlace(caller);
      char* area = place(ranks * block);
      if (!leftInPlace) staged.blockStride = 0;
      // The nranks blocks in one 2-D copy, in cudaMemcpy2D's order (in place, the rank's own block
      // goes back unchanged).
      auto copyBlocks = [&](std::vector<StreamCopy>& copies, void* dst, size_t dstPitch, const void* src,
                            size_t srcPitch) {
        if (base && block && !leftInPlace)
          copies.push_back({.stream = caller.stream,
                            .dst = dst,
                            .src = src,
                            .bytes = block,
                            .rows = ranks,
                            .dstPitch = dstPitch,
                            .srcPitch = srcPitch});
      };
      if (exchanges) {
        // Both buffers strided, so both staged, each into an area of its own (in place, one area):
        // a call has one stride for both.
        char* out = inPlace ? area : place(ranks * block);
        staged.sendbuff = area;
        staged.recvbuff = out;
        copyBlocks(batch->copiesIn, area, block, send, stride);
        copyBlocks(batch->copiesOut, recv, stride, out, block);
      } else if (gathers) {
        staged.recvbuff = area;
        copyBlocks(batch->copiesOut, recv, stride, area, block);
        if (inPlace || sendOnDevice) {
          staged.sendbuff = inPlace ? area + rank * block : place(block);
          copyIn(caller.stream, const_cast<void*>(staged.sendbuff), send, block);
        }
      } else {
        staged.sendbuff = area;
        copyBlocks(batch->copiesIn, area, block, send, stride);
        if (inPlace || recvOnDevice) {
          staged.recvbuff = inPlace ? area + rank * block : place(block);
          copyOut(caller.stream, recv, staged.recvbuff, block);
        }
      }
      // No residual, no PreMulSum scalar below: such calls are not cut.
    } else if (buffersOverlap(caller) && (sendOnDevice || recvOnDevice)) {
      const char* low = std::min<const char*>(send, recv);
      const char* high = std::max<const char*>(send + spans.send, recv + spans.recv);
      char* area = place(static_cast<size_t>(high - low));
      staged.sendbuff = area + (send - low);
      staged.recvbuff = area + (recv - low);
      copyIn(caller.stream, const_cast<void*>(staged.sendbuff), send, spans.send);
      copyOut(caller.stream, recv, staged.recvbuff, spans.recv);
    } else {
      if (sendOnDevice) {
        staged.sendbuff = place(spans.send);
        copyIn(caller.stream, const_cast<void*>(staged.sendbuff), send, spans.send);
      }
      if (recvOnDevice) {
        staged.recvbuff = place(spans.recv);
        copyOut(caller.stream, recv, staged.recvbuff, spans.recv);
      }
    }
    const size_t residualBytes = caller.count * sizeof(float);
    if (onDevice(caller.residual, residualBytes)) {
      staged.residual = reinterpret_cast<float*>(place(residualBytes));
      copyIn(caller.stream, staged.residual, caller.residual, residualBytes);
      copyOut(caller.stream, caller.residual, staged.residual, residualBytes);
    }
    const size_t scalarBytes = dataTypeSize(caller.datatype);
    if (onDevice(caller.preMulSum.address, scalarBytes)) {  // read in stream order, like the buffers
      staged.preMulSum.address = place(scalarBytes);
      copyIn(caller.stream, const_cast<void*>(staged.preMulSum.address), caller.preMulSum.address, scalarBytes);
    }
    if (atRun) {
      atRun->stagingSend = const_cast<char*>(static_cast<const char*>(staged.sendbuff));
      atRun->stagingRecv = static_cast<char*>(staged.recvbuff);
      staged.sendbuff = caller.sendbuff;
      staged.recvbuff = caller.recvbuff;
    }
  }
  return used;
}

ncclResult_t queueOf(ncclComm* comm, DeviceApi* device, StreamQueue** out) {
  std::lock_guard<std::mutex> lock(comm->device.mutex);
  if (!comm->device.queue) comm->device.queue = std::make_unique<StreamQueue>(comm, device);
  *out = comm->device.queue.get();
  return ncclSuccess;
}

StreamQueue* existingQueue(ncclComm* comm) {
  std::lock_guard<std::mutex> lock(comm->device.mutex);
  return comm->device.queue.get();
}

// A communicator's calls of the group that go into one batch: all of them, or, where a call is
// cut for pipelined staging, each of its slices alone and the calls between them together.
struct CommCalls {
  ncclComm* comm = nullptr;
  std::vector<const CollectiveCall*> calls;
  bool pointToPoint = false;          // holds the communicator's sends and receives
  std::vector<cudaStream_t> streams;  // of all the communicator's calls in the group
  size_t groupCalls = 0;              // of the communicator in the group, slices and pieces counted
  bool device = false;
  StreamBatch* batch = nullptr;
};

ncclResult_t refuseGraphCapture(DeviceApi* device, const CollectiveCall& call) {
  bool capturing = false;
  WEFT_CHECK(device->isCapturing(call.stream, &capturing));
  if (capturing)
    return fail(ncclInvalidUsage,
                "%s: stream %p is being captured into a CUDA graph; weft does not support capturing collectives "
                "yet (run them outside the capture)",
                call.kind.isPointToPoint() ? (call.kind.isSend() ? "ncclSend" : "ncclRecv")
                                           : collectiveName(call.kind.collective()),
                static_cast<void*>(call.stream));
  return ncclSuccess;
}

// Whether the call can skip staging for the direct path: a call the ranks agree to try direct
// (the same verdict on every rank: runtime/exec/direct_path.h) whose buffers on this rank (those
// it reads or writes) are device memory. The buffers peers read or write are exported now, on
// the caller's thread, where the seam can; where it cannot (cudaMalloc's), the call goes through
// the communicator's own device buffers, up to their limit, as does an in-place all-to-all
// (its direct schedule needs buffers apart).
bool leaveForDirectPath(const CollectiveCall& call, DeviceApi* device, DeviceBuffers* out) {
  const BufferSpans spans = bufferSpans(call);
  if (call.kind.isPointToPoint()) {  // runtime/exec/direct_point_to_point.h: a receive's buffer exported
    *out = DeviceBuffers{};
    if (!pointToPointDirectEligible(call)) return false;
    if (call.kind.isSend()) return onDevice(call.sendbuff, spans.send);
    if (!onDevice(call.recvbuff, spans.recv)) return false;
    if (device->exportDeviceBuffer(call.recvbuff, spans.recv, &out->recv)) return true;
    out->throughOwnBuffers = true;  // received there, copied out after the run
    return spans.recv <= call.comm->agreed.ownDeviceBufferBytes;
  }
  if (!directPathEligible(call) || call.op >= ncclNumOps || takesOneShot(call) || compressedAllReduceWanted(call) ||
      (spans.send && !onDevice(call.sendbuff, spans.send)) || (spans.recv && !onDevice(call.recvbuff, spans.recv)))
    return false;
  // Exported are only the buffers peers read or write; the others only this rank's kernels touch.
  const BufferSpans visible = peerVisibleSpans(call);
  *out = DeviceBuffers{};
  if (!needsApartBuffers(call) &&
      (!visible.send || device->exportDeviceBuffer(call.sendbuff, visible.send, &out->send)) &&
      (!visible.recv || device->exportDeviceBuffer(call.recvbuff, visible.recv, &out->recv)))
    return true;
  *out = DeviceBuffers{};
  out->throughOwnBuffers = true;
  // There a strided piece's blocks lie back to back (runtime/exec/staging_slices.h cut it to fit).
  const BufferSpans own = bufferSpans(contiguousView(call));
  return std::max(own.send, own.recv) <= call.comm->agreed.ownDeviceBufferBytes;
}

// The batch of one communicator's calls: staged, its streams listed.
ncclResult_t prepareBatch(CommCalls& share, DeviceApi* device) {
  StreamQueue* queue = nullptr;
  WEFT_CHECK(queueOf(share.comm, device, &queue));
  StreamBatch* batch = share.batch = queue->newBatch();
  for (const CollectiveCall* call : share.calls) {
    batch->calls.push_back(*call);
    batch->calls.back().callerSendbuff = call->sendbuff;
    batch->calls.back().callsInGroup = share.groupCalls;
    DeviceBuffers direct;
    if (leaveForDirectPath(batch->calls.back(), device, &direct)) {  // (the copy knows its group)
      batch->deviceBuffers.push_back(direct);
      batch->calls.back().deviceBuffers = &batch->deviceBuffers.back();
    }
  }
  batch->streams = share.streams;
  const size_t bytes = layOutStaging(share.calls, batch, nullptr);
  if (bytes == 0) return ncclSuccess;  // pinned and host buffers only: ordered on the streams, nothing to copy
  WEFT_CHECK(queue->staging().acquire(bytes, &batch->staging));
  layOutStaging(share.calls, batch, batch->staging->data);
  return ncclSuccess;
}

// The group's calls in batches, in call order per communicator: all of a communicator's calls
// in one, unless some are slices of a cut call. Then each slice is a batch of its own, the calls
// between slices share one, and all of its sends and receives join the batch of the first (the
// executor runs them as one item where the first was called, as on a rank whose calls run on
// host memory). Every batch of a communicator lists every stream of its calls in the group, so
// that each stream waits for the whole group, as NCCL's do. A communicator whose calls touch
// device memory (or pinned memory) has them all ordered on its streams.
std::vector<CommCalls> sharesOf(const std::vector<CollectiveCall>& calls) {
  std::vector<CommCalls> shares;
  for (const CollectiveCall& call : calls) {
    if (call.kind.isPointToPoint()) {
      auto joined = std::find_if(shares.begin(), shares.end(),
                                 [&](const CommCalls& s) { return s.comm == call.comm && s.pointToPoint; });
      if (joined != shares.end()) {
        joined->calls.push_back(&call);
        continue;
      }
    }
    auto last = std::find_if(shares.rbegin(), shares.rend(), [&](const CommCalls& s) { return s.comm == call.comm; });
    if (last == shares.rend() || call.stagingSlice || last->calls.back()->stagingSlice) {
      shares.emplace_back();
      shares.back().comm = call.comm;
      last = shares.rbegin();
    }
    last->calls.push_back(&call);
    last->pointToPoint = last->pointToPoint || call.kind.isPointToPoint();
  }
  std::vector<const ncclComm*> onStreams;
  for (const CollectiveCall& call : calls)
    if (touchesStreamOrderedMemory(call) && std::find(onStreams.begin(), onStreams.end(), call.comm) == onStreams.end())
      onStreams.push_back(call.comm);
  for (CommCalls& share : shares) {
    share.device = std::find(onStreams.begin(), onStreams.end(), share.comm) != onStreams.end();
    share.groupCalls = static_cast<size_t>(
        std::count_if(calls.begin(), calls.end(), [&](const CollectiveCall& c) { return c.comm == share.comm; }));
    for (const CollectiveCall& call : calls)
      if (call.comm == share.comm &&
          std::find(share.streams.begin(), share.streams.end(), call.stream) == share.streams.end())
        share.streams.push_back(call.stream);
  }
  return shares;
}

}  // namespace

ncclResult_t dispatchCollectives(const std::vector<CollectiveCall>& given) {
  // Every rank cuts alike, whatever memory its buffers are (runtime/exec/staging_slices.h).
  std::vector<CollectiveCall> slices;
  const std::vector<CollectiveCall>& calls = cutIntoStagingSlices(given, &slices);
  DeviceApi* device = deviceApi();
  if (!device) return runCollectives(calls);
  if (std::none_of(calls.begin(), calls.end(), touchesStreamOrderedMemory)) {
    // Host memory only (the usual case; nothing allocated): after the device calls made before.
    for (const CollectiveCall& call : calls)
      if (StreamQueue* queue = existingQueue(call.comm))
        WEFT_CHECK(queue->waitUntilIdle(communicatorTimeout(call.comm)));
    return runCollectives(calls);
  }

  std::vector<CommCalls> shares = sharesOf(calls);
  for (const CommCalls& share : shares) {
    if (!share.device) continue;
    CurrentDeviceScope onDevice(share.comm->cudaDevice);  // stream 0 is the communicator's device's
    WEFT_CHECK(onDevice.result());
    for (const CollectiveCall* call : share.calls) WEFT_CHECK(refuseGraphCapture(device, *call));
  }

  // Every batch's first half before any second half (stream_queue.h), then each goes to its
  // communicator's progress thread; a failure still submits the batch, to complete unrun.
  // Each communicator's stream operations run with its device current (stream 0 is that
  // device's legacy stream), the caller's restored afterwards.
  ncclResult_t result = ncclSuccess;
  for (CommCalls& share : shares) {
    if (!share.device) continue;
    CurrentDeviceScope onDevice(share.comm->cudaDevice);
    ncclResult_t r = onDevice.result();
    if (r == ncclSuccess) r = prepareBatch(share, device);
    if (r == ncclSuccess) r = share.batch->queue->enqueueInputs(share.batch);
    if (r != ncclSuccess) {
      if (share.batch) share.batch->failedToEnqueue = true;
      setCommunicatorError(share.comm, r);
      result = r;
    }
  }
  for (CommCalls& share : shares) {
    if (!share.batch) continue;
    if (!share.batch->failedToEnqueue) {
      CurrentDeviceScope onDevice(share.comm->cudaDevice);
      ncclResult_t r = onDevice.result();
      if (r == ncclSuccess) r = share.batch->queue->enqueueOutputs(share.batch);
      if (r != ncclSuccess) {
        share.batch->failedToEnqueue = true;
        setCommunicatorError(share.comm, r);
        result = r;
      }
    }
    share.batch->queue->submit(share.batch);
  }
  if (result != ncclSuccess) return result;

  std::vector<CollectiveCall> hostCalls;
  for (const CommCalls& share : shares) {
    if (share.device) continue;
    if (StreamQueue* queue = existingQueue(share.comm))
      WEFT_CHECK(queue->waitUntilIdle(communicatorTimeout(share.comm)));
    for (const CollectiveCall* call : share.calls) hostCalls.push_back(*call);
  }
  return hostCalls.empty() ? ncclSuccess : runCollectives(hostCalls);
}

ncclResult_t waitForStreamWork(ncclComm* comm) {
  StreamQueue* queue = existingQueue(comm);
  return queue ? queue->waitUntilIdle(communicatorTimeout(comm)) : ncclSuccess;
}

void wakeStreamWork(ncclComm* comm) {
  if (StreamQueue* queue = existingQueue(comm)) queue->wake();
}

bool stopStreamWork(ncclComm* comm) {
  StreamQueue* queue = existingQueue(comm);
  return !queue || queue->stop(communicatorTimeout(comm));
}

}  // namespace weft
