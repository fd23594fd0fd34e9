#include "operation_queue.h"

#include <stdexcept>

namespace weft_torch {

OperationQueue::OperationQueue() : thread_([this] { loop(); }) {}

OperationQueue::~OperationQueue() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void OperationQueue::push(Operation operation) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.push_back(std::move(operation));
  }
  changed_.notify_all();
}

void OperationQueue::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
    if (pending_.empty()) return;
    Operation operation = std::move(pending_.front());
    pending_.pop_front();
    lock.unlock();
    std::exception_ptr error;
    try {
      std::string message = operation.run();
      if (!message.empty()) error = std::make_exception_ptr(std::runtime_error(message));
    } catch (...) {
      error = std::current_exception();
    }
    completions_.push([works = std::move(operation.works), error] {
      for (auto& work : works) work->complete(error);
    });
    lock.lock();
  }
}

}  // namespace weft_torch
