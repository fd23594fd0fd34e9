// The worker thread of one process group: operations run in the order they were issued, one at
// a time, each then completing its Work objects on the completion pool (completion_pool.h). torch.distributed calls
// return at once (async_op and DDP's bucketed all-reduces overlap with the caller); the thread sleeps when the queue is
// empty.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "completion_pool.h"
#include "work_weft.h"

namespace weft_torch {

struct Operation {
  // Runs the operation; returns an error message, empty on success.
  std::function<std::string()> run;
  std::vector<c10::intrusive_ptr<WorkWeft>> works;  // completed with its result
};

class OperationQueue {
 public:
  OperationQueue();
  ~OperationQueue();  // runs what is queued, then stops
  void push(Operation operation);
  // Runs the operation that completes `work` on the calling thread, if it is the next to run
  // and none is running (a caller about to wait for it saves two thread hand-offs: what a
  // synchronous torch.distributed call costs most for small tensors). True if it did.
  bool runIfNext(const WorkWeft* work);

 private:
  void loop();
  // Runs `operation` and returns its error (null on success).
  static std::exception_ptr execute(Operation& operation);

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Operation> pending_;
  bool stopping_ = false;
  bool running_ = false;        // an operation runs, on the worker or on a waiting caller
  CompletionPool completions_;  // declared before the worker: it outlives the worker's last push
  std::thread thread_;
};

}  // namespace weft_torch
