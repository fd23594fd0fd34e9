// Where finished operations complete their Work objects. Completing a future runs its callbacks
// on the completing thread, and a DDP communication hook may, inside a callback, issue another
// operation and wait for it (PyTorch's PowerSGD hook does): on the group's one worker thread
// that would wait forever. So completions run on a pool of threads that grows whenever every
// thread is busy (a callback waiting), and whose idle threads wait for the next completion.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace weft_torch {

class CompletionPool {
 public:
  CompletionPool() = default;
  ~CompletionPool();  // runs what is queued, then joins the threads
  CompletionPool(const CompletionPool&) = delete;
  CompletionPool& operator=(const CompletionPool&) = delete;

  void push(std::function<void()> completion);

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> pending_;
  size_t idle_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace weft_torch
