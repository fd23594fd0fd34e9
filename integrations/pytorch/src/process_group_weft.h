// torch.distributed's process group on weft (PyTorch 1.13's c10d::ProcessGroup): every operation
// of the CPU backends on CPU tensors, run by weft's host collectives on the group's worker
// thread (operation_queue.h), so that every call returns at once with a Work whose future
// DDP can chain on. One weft communicator per group; its unique id travels through the
// group's store (rank 0 writes it), so the launcher's own rendezvous port is never bound.
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <memory>
#include <vector>

#include "nccl.h"
#include "operation_queue.h"
#include "weft/compression.h"

namespace weft_torch {

class ProcessGroupWeft : public c10d::ProcessGroup {
 public:
  ProcessGroupWeft(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, std::chrono::milliseconds timeout);
  ~ProcessGroupWeft() override;

  // What torch.distributed.Backend.register_backend calls.
  static c10::intrusive_ptr<c10d::ProcessGroup> create(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                       const std::chrono::duration<float>& timeout);

  const std::string getBackendName() const override { return "weft"; }

  // new_group's split (weft_torch wraps torch.distributed.new_group to call it on every rank of
  // the parent, members or not, before torch creates the group): splits `parent`'s communicator
  // with ncclCommSplit in the parent's operation order; the member ranks' next ProcessGroupWeft
  // adopts the new communicator instead of meeting through the store.
  static void splitForNewGroup(const c10::intrusive_ptr<c10d::ProcessGroup>& parent,
                               const std::vector<int64_t>& members);
  // Drops a split communicator that no group adopted (new_group failed, or not a member).
  static void discardPendingSplit();
  // Groups of this process made from a split so far (for the tests).
  static uint64_t adoptedSplitCount();

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts = c10d::BroadcastOptions()) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts = c10d::AllreduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors,
      const c10d::AllreduceCoalescedOptions& opts = c10d::AllreduceCoalescedOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts = c10d::ReduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputTensors,
                                           std::vector<at::Tensor>& inputTensors,
                                           const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(
      at::Tensor& outputBuffer, at::Tensor& inputBuffer,
      const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputTensors,
                                        std::vector<at::Tensor>& inputTensors,
                                        const c10d::GatherOptions& opts = c10d::GatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputTensors,
                                         std::vector<std::vector<at::Tensor>>& inputTensors,
                                         const c10d::ScatterOptions& opts = c10d::ScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(
      std::vector<at::Tensor>& outputTensors, std::vector<std::vector<at::Tensor>>& inputTensors,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& outputBuffer, at::Tensor& inputBuffer,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& outputBuffer, at::Tensor& inputBuffer,
                                               std::vector<int64_t>& outputSplitSizes,
                                               std::vector<int64_t>& inputSplitSizes,
                                               const c10d::AllToAllOptions& opts = c10d::AllToAllOptions()) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputTensors, std::vector<at::Tensor>& inputTensors,
                                          const c10d::AllToAllOptions& opts = c10d::AllToAllOptions()) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dstRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int srcRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts = c10d::BarrierOptions()) override;

  // batch_isend_irecv: the sends and receives issued between these run as one weft group, so
  // that every rank may post its sends before its receives.
  void startCoalescing() override;
  void endCoalescing(std::vector<c10::intrusive_ptr<c10d::Work>>& reqs) override;

  // A compressed all-reduce (weftAllReduceCompressed) of a float32 tensor, averaged when
  // `average`; `residual` (error-feedback state for the tensor's element count) may be null.
  c10::intrusive_ptr<c10d::Work> allreduceCompressed(at::Tensor& tensor, const weftCompressor_t& compressor,
                                                     weftErrorFeedback_t residual, bool average);

  ncclComm_t communicator() const { return comm_; }
  // Bytes of tensors passed to all_reduce and all_reduce_coalesced so far (not the compressed
  // all-reduce): what the convergence study counts as an exact all-reduce's payload.
  uint64_t allReducePayloadBytes() const { return allReducePayloadBytes_.load(); }

 private:
  // The communicator from a unique id that rank 0 writes into the group's store.
  void initThroughStore(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size);
  // Queues `run` (weft calls on the worker thread; ncclSuccess or the failing result) as one
  // operation completing a new Work whose result is `outputs`.
  c10::intrusive_ptr<c10d::Work> enqueue(c10d::OpType type, std::vector<at::Tensor> outputs,
                                         std::function<ncclResult_t()> run);
  std::string failure(ncclResult_t result) const;
  // A send or receive: queued now, or held for endCoalescing inside a coalescing window.
  c10::intrusive_ptr<c10d::Work> pointToPoint(c10d::OpType type, const at::Tensor& tensor,
                                              std::function<ncclResult_t()> call);

  ncclComm_t comm_ = nullptr;
  at::Tensor barrierTensor_;
  // Sends and receives of an open coalescing window (startCoalescing), with their Works.
  bool coalescing_ = false;
  std::vector<std::function<ncclResult_t()>> coalescedCalls_;
  std::vector<c10::intrusive_ptr<WorkWeft>> coalescedWorks_;
  std::atomic<uint64_t> allReducePayloadBytes_{0};
  std::shared_ptr<OperationQueue> queue_;  // last: stopped (drained) first; Works hold it weakly
};

}  // namespace weft_torch
