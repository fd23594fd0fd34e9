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

std::exception_ptr OperationQueue::execute(Operation& operation) {
  try {
    std::string message = operation.run();
    if (!message.empty()) return std::make_exception_ptr(std::runtime_error(message));
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

void OperationQueue::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || (!pending_.empty() && !running_); });
    if (pending_.empty()) return;
    Operation operation = std::move(pending_.front());
    pending_.pop_front();
    running_ = true;
    lock.unlock();
    std::exception_ptr error = execute(operation);
    completions_.push([works = std::move(operation.works), error] {
      for (auto& work : works) work->complete(error);
    });
    lock.lock();
    running_ = false;
  }
}

bool OperationQueue::runIfNext(const WorkWeft* work) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (running_ || pending_.empty() || pending_.front().works.empty() || pending_.front().works[0].get() != work)
    return false;
  Operation operation = std::move(pending_.front());
  pending_.pop_front();
  running_ = true;
  lock.unlock();
  std::exception_ptr error = execute(operation);
  // Completed here: this thread is the one waiting; a callback that issues and waits for
  // another operation finds the worker free.
  for (auto& w : operation.works) w->complete(error);
  lock.lock();
  running_ = false;
  changed_.notify_all();  // the worker may take the next one
  return true;
}

}  // namespace weft_torch
