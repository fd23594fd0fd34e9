#include "runtime/device/stream_queue.h"

#include "common/deadline.h"
#include "common/dtype.h"
#include "common/log.h"
#include "common/status.h"
#include "runtime/comm/communicator.h"
#include "runtime/device/staged_at_run.h"
#include "runtime/exec/direct_path.h"

namespace weft {

StreamQueue::StreamQueue(ncclComm* comm, DeviceApi* device) : comm_(comm), device_(device), staging_(device) {
  void* flag = nullptr;
  if (device_->allocatePinned(sizeof(std::atomic<uint32_t>), &flag) == ncclSuccess)
    completion_ = new (flag) std::atomic<uint32_t>(0);
  thread_ = std::thread([this] { progressLoop(); });
}

StreamQueue::~StreamQueue() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (work_.stream) {
    CurrentDeviceScope onDevice(comm_->cudaDevice);
    device_->destroyWorkStream(work_.stream);
  }
  if (completion_) device_->freePinned(completion_);
}

ncclResult_t StreamQueue::deviceWork(const DeviceWork** out) {
  if (!work_.stream) {
    WEFT_CHECK(device_->createWorkStream(&work_.stream));
    work_.api = device_;
  }
  *out = &work_;
  return ncclSuccess;
}

ncclResult_t StreamQueue::runBatch(StreamBatch* batch) {
  // runCollectives records a failure as the communicator's asynchronous error.
  ncclResult_t result = runCollectives(batch->calls);
  if (!batch->deviceBuffers.empty()) {
    const ncclResult_t copied = finishOwnDeviceBuffers(comm_, result == ncclSuccess);
    if (result == ncclSuccess) result = copied;
  }
  if (result != ncclSuccess) {
    setCommunicatorError(comm_, result);  // the results are not in place
    return result;
  }
  bool copied = false;
  for (const CollectiveCall& call : batch->calls) {
    if (!call.deviceBuffers || !call.deviceBuffers->stagedAtRun) continue;
    if (bufferSpans(call).recv == 0) continue;
    result = copyResultFromContiguous(work_, call, call.deviceBuffers->stagingRecv);
    if (result != ncclSuccess) break;
    copied = true;
  }
  if (result == ncclSuccess && copied) result = device_->synchronizeStream(work_.stream);
  if (result != ncclSuccess) setCommunicatorError(comm_, result);  // the results are not in place
  return result;
}

StreamBatch* StreamQueue::newBatch() {
  auto batch = std::make_unique<StreamBatch>();
  batch->queue = this;
  std::lock_guard<std::mutex> lock(mutex_);
  batch->sequence = nextSequence_++;
  batches_.push_back(std::move(batch));
  return batches_.back().get();
}

ncclResult_t StreamQueue::enqueueCopy(const StreamCopy& copy) {
  if (copy.rows == 1) return device_->copyAsync(copy.dst, copy.src, copy.bytes, copy.stream);
  return device_->copy2DAsync(copy.dst, copy.dstPitch, copy.src, copy.srcPitch, copy.bytes, copy.rows, copy.stream);
}

ncclResult_t StreamQueue::enqueueInputs(StreamBatch* batch) {
  if (!completion_) return fail(ncclSystemError, "rank %d: no pinned memory for the completion flag", comm_->rank);
  for (cudaStream_t stream : batch->streams) {
    for (const StreamCopy& copy : batch->copiesIn)
      if (copy.stream == stream) WEFT_CHECK(enqueueCopy(copy));
    WEFT_CHECK(launchCounted(stream, readyHostFunction, batch, &batch->expectedReadies));
  }
  return ncclSuccess;
}

ncclResult_t StreamQueue::enqueueOutputs(StreamBatch* batch) {
  for (cudaStream_t stream : batch->streams) {
    WEFT_CHECK(device_->waitValue(stream, completion_, batch->sequence));
    for (const StreamCopy& copy : batch->copiesOut)
      if (copy.stream == stream) WEFT_CHECK(enqueueCopy(copy));
    WEFT_CHECK(launchCounted(stream, releasedHostFunction, batch, &batch->expectedReleases));
  }
  return ncclSuccess;
}

ncclResult_t StreamQueue::launchCounted(cudaStream_t stream, void (*function)(void*), StreamBatch* batch,
                                        size_t* expected) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++*expected;  // before the host function exists, so that the batch cannot be freed under it
  }
  ncclResult_t result = device_->launchHostFunction(stream, function, batch);
  if (result != ncclSuccess) {
    std::lock_guard<std::mutex> lock(mutex_);
    --*expected;
  }
  return result;
}

void StreamQueue::submit(StreamBatch* batch) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    batch->submitted = true;
  }
  changed_.notify_all();
}

void StreamQueue::readyHostFunction(void* argument) {
  auto* batch = static_cast<StreamBatch*>(argument);
  StreamQueue* queue = batch->queue;
  // Notified under the lock: once it is released the queue may be stopped and freed.
  std::lock_guard<std::mutex> lock(queue->mutex_);
  ++batch->readyStreams;
  queue->changed_.notify_all();
}

void StreamQueue::releasedHostFunction(void* argument) {
  auto* batch = static_cast<StreamBatch*>(argument);
  StreamQueue* queue = batch->queue;
  std::lock_guard<std::mutex> lock(queue->mutex_);  // notified under it, as above
  ++batch->releasedStreams;
  queue->retireReleased();
  queue->changed_.notify_all();
}

void StreamQueue::retireReleased() {
  while (!batches_.empty()) {
    StreamBatch* front = batches_.front().get();
    if (!front->completed || front->readyStreams < front->expectedReadies ||
        front->releasedStreams < front->expectedReleases)
      return;
    if (front->staging) staging_.release(front->staging);
    batches_.pop_front();
  }
}

void StreamQueue::complete(StreamBatch* batch) {
  batch->completed = true;
  completion_->store(batch->sequence, std::memory_order_release);
  completion_->notify_all();
  retireReleased();
  changed_.notify_all();
}

void StreamQueue::progressLoop() {
  // The communicator's device, so that what this thread asks CUDA (whether a pointer is device
  // memory, a PreMulSum scalar) never creates a context on device 0.
  if (comm_->cudaDevice >= 0 && device_->setCurrentDevice(comm_->cudaDevice) != ncclSuccess)
    WEFT_WARN("rank %d: the progress thread could not select device %d: %s", comm_->rank, comm_->cudaDevice,
              lastErrorMessage().c_str());
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    StreamBatch* next = nullptr;
    for (auto& batch : batches_) {
      if (batch->completed) continue;
      if (batch->submitted) next = batch.get();
      break;  // batches run in order: the first not completed is the only candidate
    }
    if (!next) {
      if (stopping_) return;
      changed_.wait(lock);
      continue;
    }
    const bool abandoned = next->failedToEnqueue || comm_->state.aborted.load(std::memory_order_acquire) ||
                           comm_->state.asyncError.load(std::memory_order_acquire) != ncclSuccess;
    if (abandoned) {
      complete(next);  // the streams go on; the error is the communicator's
      continue;
    }
    if (next->readyStreams < next->expectedReadies) {
      changed_.wait(lock);
      continue;
    }
    lock.unlock();
    ncclResult_t result = runBatch(next);
    if (result != ncclSuccess)
      WEFT_WARN("rank %d: a stream-ordered batch of %zu call(s) failed: %s", comm_->rank, next->calls.size(),
                lastErrorMessage().c_str());
    lock.lock();
    complete(next);
  }
}

ncclResult_t StreamQueue::waitUntilIdle(double seconds) {
  const Deadline deadline = Deadline::after(seconds);
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    bool idle = true;
    for (auto& batch : batches_) idle = idle && batch->completed;
    if (idle) return ncclSuccess;
    if (deadline.expired())
      return fail(ncclSystemError,
                  "rank %d: device-memory calls enqueued earlier did not complete within WEFT_TIMEOUT (have their "
                  "streams reached them?)",
                  comm_->rank);
    changed_.wait_for(lock, std::chrono::milliseconds(10));
  }
}

void StreamQueue::wake() { changed_.notify_all(); }

bool StreamQueue::stop(double seconds) {
  const Deadline deadline = Deadline::after(seconds);
  std::unique_lock<std::mutex> lock(mutex_);
  while (!batches_.empty()) {
    if (deadline.expired()) {
      WEFT_WARN(
          "rank %d: %zu stream-ordered batch(es) not released by their streams after WEFT_TIMEOUT; the "
          "communicator is leaked",
          comm_->rank, batches_.size());
      return false;
    }
    changed_.wait_for(lock, std::chrono::milliseconds(10));
  }
  return true;
}

}  // namespace weft
