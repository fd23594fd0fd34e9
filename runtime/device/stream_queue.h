// A communicator's stream-ordered work: the batches of device-memory calls its streams will
// reach, and the progress thread that runs each batch once every stream of it has (sleeping
// while none has). Per batch and stream, the stream is given:
//
//   copies in (device -> staging) ; host function "ready"         (enqueueInputs)
//   wait until completion >= batch ; copies out ; host function "released"   (enqueueOutputs)
//
// The progress thread runs the batch's calls on the staged buffers with the host executor,
// then publishes the batch's number into the completion flag the streams wait on (also after
// a failure or an abort, so that a stream is never left waiting: the error is the
// communicator's asynchronous error). Batches run in the order they were enqueued, which is
// the order of the calls, as NCCL requires.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/device/device_api.h"
#include "runtime/device/staging.h"
#include "runtime/exec/collective.h"

namespace weft {

// One stream-ordered copy between the caller's device memory and a staging area: `bytes`, or
// `rows` rows of `bytes` each, dstPitch and srcPitch apart (a strided slice's blocks).
struct StreamCopy {
  cudaStream_t stream;
  void* dst;
  const void* src;
  size_t bytes;
  size_t rows = 1;
  size_t dstPitch = 0;
  size_t srcPitch = 0;
};

class StreamQueue;

// The calls of one communicator from one ncclGroupEnd (or one lone call), staged; or one slice
// of a call cut for pipelined staging, or the calls between such slices
// (runtime/exec/staging_slices.h).
struct StreamBatch {
  std::vector<CollectiveCall> calls;  // buffers point into `staging` where the caller's are device memory
  std::vector<StreamCopy> copiesIn;
  std::vector<StreamCopy> copiesOut;
  std::vector<cudaStream_t> streams;  // distinct, in first-use order
  // Of the calls left unstaged for the direct path (CollectiveCall::deviceBuffers points here).
  std::deque<DeviceBuffers> deviceBuffers;
  StagingArea* staging = nullptr;
  StreamQueue* queue = nullptr;
  uint32_t sequence = 0;
  // Set under the queue's mutex.
  // Host functions enqueued and run: the batch is freed only when every one it was given has
  // run, even after a failure to enqueue part of it.
  size_t expectedReadies = 0;
  size_t readyStreams = 0;
  size_t expectedReleases = 0;
  size_t releasedStreams = 0;
  bool failedToEnqueue = false;  // some stream operation was refused: complete without running
  bool submitted = false;
  bool completed = false;
};

class StreamQueue {
 public:
  StreamQueue(ncclComm* comm, DeviceApi* device);
  ~StreamQueue();  // stops the progress thread; call stop() first
  StreamQueue(const StreamQueue&) = delete;
  StreamQueue& operator=(const StreamQueue&) = delete;

  DeviceApi* device() const { return device_; }
  StagingPool& staging() { return staging_; }
  // The progress thread's own stream (made on first use, from that thread): the direct path's
  // kernels, and the copies of calls staged when they run.
  ncclResult_t deviceWork(const DeviceWork** out);

  // A new batch, numbered, owned by the queue until its staging has been released.
  StreamBatch* newBatch();
  // The first half of the batch on each of its streams, then the second. Between the two
  // halves, other batches of the same group enqueue their first halves, so that ranks of one
  // process that share a stream never wait on each other's second half.
  ncclResult_t enqueueInputs(StreamBatch* batch);
  ncclResult_t enqueueOutputs(StreamBatch* batch);
  // Hands the batch to the progress thread (after both halves, or after a failure to enqueue).
  void submit(StreamBatch* batch);

  // Waits until every submitted batch has completed, for at most `seconds`: a host-memory call
  // on this communicator, and ncclCommFinalize, come after the device calls made before them.
  ncclResult_t waitUntilIdle(double seconds);
  // Wakes the progress thread to notice an abort.
  void wake();
  // Waits (at most `seconds`) until the streams have released every batch, then stops the
  // progress thread. False when a stream never got there: the queue must then be leaked.
  bool stop(double seconds);

 private:
  ncclResult_t enqueueCopy(const StreamCopy& copy);
  // Launches a host function of `batch`, counting it in *expected.
  ncclResult_t launchCounted(cudaStream_t stream, void (*function)(void*), StreamBatch* batch, size_t* expected);
  static void readyHostFunction(void* batch);
  static void releasedHostFunction(void* batch);
  void progressLoop();
  // Runs a batch's calls; copies back the results of those staged as they ran.
  ncclResult_t runBatch(StreamBatch* batch);
  // Publishes the batch's number to the streams waiting on it.
  void complete(StreamBatch* batch);
  void retireReleased();  // under mutex_

  ncclComm* comm_;
  DeviceApi* device_;
  StagingPool staging_;
  std::atomic<uint32_t>* completion_ = nullptr;  // pinned: streams wait on it
  DeviceWork work_;                              // its stream made on first use
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::unique_ptr<StreamBatch>> batches_;  // in sequence order, until released
  uint32_t nextSequence_ = 1;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace weft
