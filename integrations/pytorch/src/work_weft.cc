#include "work_weft.h"

#include <ATen/core/ivalue_inl.h>

#include "operation_queue.h"

namespace weft_torch {

WorkWeft::WorkWeft(int rank, c10d::OpType type, std::vector<at::Tensor> outputs)
    : c10d::Work(rank, type),
      outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}

bool WorkWeft::isCompleted() { return future_->completed(); }

bool WorkWeft::isSuccess() const { return future_->completed() && !future_->hasError(); }

std::exception_ptr WorkWeft::exception() const {
  return future_->completed() && future_->hasError() ? future_->exception_ptr() : nullptr;
}

std::vector<at::Tensor> WorkWeft::result() { return outputs_; }

bool WorkWeft::wait(std::chrono::milliseconds timeout) {
  if (!future_->completed())
    if (std::shared_ptr<OperationQueue> queue = queue_.lock()) queue->runIfNext(this);
  if (timeout == kNoTimeout) {
    future_->wait();
  } else {
    // c10's Future has no timed wait: poll (the group's own time-out, WEFT_TIMEOUT, bounds the
    // operation anyway; this only returns early).
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!future_->completed()) {
      if (std::chrono::steady_clock::now() >= deadline)
        TORCH_CHECK(false, "weft: operation did not complete within ", timeout.count(), " ms");
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  if (future_->hasError()) std::rethrow_exception(future_->exception_ptr());
  return true;
}

c10::intrusive_ptr<c10::ivalue::Future> WorkWeft::getFuture() { return future_; }

void WorkWeft::complete(std::exception_ptr error) {
  if (error)
    future_->setError(error);
  else
    future_->markCompleted(c10::IValue(outputs_));
}

}  // namespace weft_torch
