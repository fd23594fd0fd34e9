// The Work object weft's process group returns: completed by the group's worker thread, with a
// future that DDP's communication hooks chain on (torch's base Work::getFuture throws).
#pragma once

#include <torch/csrc/distributed/c10d/Work.hpp>

#include <exception>
#include <memory>
#include <vector>

namespace weft_torch {

class OperationQueue;

class WorkWeft : public c10d::Work {
 public:
  WorkWeft(int rank, c10d::OpType type, std::vector<at::Tensor> outputs);

  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  std::vector<at::Tensor> result() override;
  // Waits for the operation; throws its error (weft's message) if it failed.
  bool wait(std::chrono::milliseconds timeout) override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

  // Called once, when the operation has run: success (the future's value is the outputs) or the error.
  void complete(std::exception_ptr error);
  // The queue the operation waits in: wait() runs it itself when it is next (runIfNext).
  void setQueue(std::weak_ptr<OperationQueue> queue) { queue_ = std::move(queue); }

 private:
  std::weak_ptr<OperationQueue> queue_;
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace weft_torch
