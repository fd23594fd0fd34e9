#include "completion_pool.h"

namespace weft_torch {

CompletionPool::~CompletionPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  for (auto& t : threads_) t.join();
}

void CompletionPool::push(std::function<void()> completion) {
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.push_back(std::move(completion));
  if (idle_ < pending_.size()) {
    threads_.emplace_back([this] { loop(); });  // every thread is busy: one more
  } else {
    changed_.notify_one();
  }
}

void CompletionPool::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    ++idle_;
    changed_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
    --idle_;
    if (pending_.empty()) return;
    std::function<void()> completion = std::move(pending_.front());
    pending_.pop_front();
    lock.unlock();
    completion();
    // Released before the lock is taken again: the last references to a work's tensors may
    // need the GIL, and a thread holding the GIL may be waiting for this lock (~CompletionPool).
    completion = nullptr;
    lock.lock();
  }
}

}  // namespace weft_torch
