#include "process_group_weft.h"

#include <Python.h>

#include <ATen/Functions.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <numeric>
#include <utility>

#include "torch_to_nccl.h"
#include "weft/weft.h"

namespace weft_torch {

namespace {

constexpr const char* kUniqueIdKey = "weft_unique_id";

void checkCpuContiguous(const at::Tensor& tensor, const char* what) {
  TORCH_CHECK(tensor.device().is_cpu(), "weft: ", what, " must be a CPU tensor (got ", tensor.device(),
              "); GPU tensors go through backend \"nccl\" with weft's libnccl.so.2");
  TORCH_CHECK(tensor.is_contiguous(), "weft: ", what, " must be contiguous");
}

void checkSingle(const std::vector<at::Tensor>& tensors, const char* what) {
  TORCH_CHECK(tensors.size() == 1, "weft: ", what, " takes exactly one tensor per process (got ", tensors.size(), ")");
  checkCpuContiguous(tensors[0], what);
}

void checkRank(int64_t rank, int size, const char* what) {
  TORCH_CHECK(rank >= 0 && rank < size, "weft: ", what, " ", rank, " is not a rank of this group (0..", size - 1, ")");
}

// Tensors of one list must share dtype and element count with `like` (gloo and NCCL require it).
void checkSameShape(const std::vector<at::Tensor>& tensors, const at::Tensor& like, const char* what) {
  for (const at::Tensor& t : tensors) {
    checkCpuContiguous(t, what);
    TORCH_CHECK(t.scalar_type() == like.scalar_type() && t.numel() == like.numel(), "weft: ", what,
                " must all have the dtype and number of elements of the input");
  }
}

// The calls of one ncclGroupStart/ncclGroupEnd: the group is always closed, and the first
// call that failed (its arguments refused) is the result, else ncclGroupEnd's.
class WeftGroup {
 public:
  WeftGroup() { ncclGroupStart(); }
  void add(ncclResult_t result) {
    if (first_ == ncclSuccess) first_ = result;
  }
  ncclResult_t end() {
    const ncclResult_t result = ncclGroupEnd();
    return first_ != ncclSuccess ? first_ : result;
  }

 private:
  ncclResult_t first_ = ncclSuccess;
};

}  // namespace

namespace {
// The communicator splitForNewGroup made for the group torch is about to create (one new_group
// at a time per process, as torch.distributed requires).
std::mutex pendingSplitMutex;
ncclComm_t pendingSplit = nullptr;
std::atomic<uint64_t> adoptedSplits{0};

ncclComm_t takePendingSplit() {
  std::lock_guard<std::mutex> lock(pendingSplitMutex);
  return std::exchange(pendingSplit, nullptr);
}
}  // namespace

void ProcessGroupWeft::splitForNewGroup(const c10::intrusive_ptr<c10d::ProcessGroup>& parent,
                                        const std::vector<int64_t>& members) {
  auto* weft = dynamic_cast<ProcessGroupWeft*>(parent.get());
  TORCH_CHECK(weft, "weft: new_group's parent is not a process group of backend \"weft\"");
  discardPendingSplit();
  const int rank = weft->getRank();
  const bool member = std::find(members.begin(), members.end(), rank) != members.end();
  auto child = std::make_shared<ncclComm_t>(nullptr);
  auto work = weft->enqueue(c10d::OpType::UNKNOWN, {}, [weft, child, member, rank]() {
    return ncclCommSplit(weft->comm_, member ? 0 : NCCL_SPLIT_NOCOLOR, rank, child.get(), nullptr);
  });
  work->wait();
  std::lock_guard<std::mutex> lock(pendingSplitMutex);
  pendingSplit = *child;
}

uint64_t ProcessGroupWeft::adoptedSplitCount() { return adoptedSplits.load(); }

void ProcessGroupWeft::discardPendingSplit() {
  if (ncclComm_t unused = takePendingSplit()) ncclCommDestroy(unused);
}

ProcessGroupWeft::ProcessGroupWeft(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                   std::chrono::milliseconds timeout)
    : c10d::ProcessGroup(rank, size) {
  if (ncclComm_t split = takePendingSplit()) {
    int splitRank = -1, splitSize = 0;
    ncclCommUserRank(split, &splitRank);
    ncclCommCount(split, &splitSize);
    if (splitRank == rank && splitSize == size) {
      comm_ = split;
      ++adoptedSplits;
    } else {
      ncclCommDestroy(split);  // not this group's: meet through the store instead
    }
  }
  if (!comm_) initThroughStore(store, rank, size);
  if (timeout.count() > 0) weftCommSetTimeout(comm_, static_cast<double>(timeout.count()) / 1000.0);
  barrierTensor_ = at::zeros({1}, at::kByte);
  queue_ = std::make_shared<OperationQueue>();
}

void ProcessGroupWeft::initThroughStore(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size) {
  ncclUniqueId id;
  if (rank == 0) {
    TORCH_CHECK(ncclGetUniqueId(&id) == ncclSuccess, "weft: ncclGetUniqueId failed: ", ncclGetLastError(nullptr));
    const auto* bytes = reinterpret_cast<const uint8_t*>(&id);
    store->set(kUniqueIdKey, std::vector<uint8_t>(bytes, bytes + sizeof(id)));
  } else {
    std::vector<uint8_t> bytes = store->get(kUniqueIdKey);
    TORCH_CHECK(bytes.size() == sizeof(id), "weft: the unique id in the store has ", bytes.size(), " bytes, not ",
                sizeof(id));
    memcpy(&id, bytes.data(), sizeof(id));
  }
  TORCH_CHECK(ncclCommInitRank(&comm_, size, id, rank) == ncclSuccess,
              "weft: ncclCommInitRank failed: ", ncclGetLastError(nullptr));
}

ProcessGroupWeft::~ProcessGroupWeft() {
  {
    // The group's last reference usually goes from Python, with the GIL held, while the
    // completion threads may need the GIL to drop the tensors of the last works: joining them
    // with the GIL held deadlocked (1 run in 8 of EnvCompression.test_two_ranks).
    PyThreadState* released = Py_IsInitialized() && PyGILState_Check() ? PyEval_SaveThread() : nullptr;
    queue_.reset();  // every queued operation runs (or fails) first
    if (released) PyEval_RestoreThread(released);
  }
  ncclResult_t asyncError = ncclSuccess;
  ncclCommGetAsyncError(comm_, &asyncError);
  if (asyncError != ncclSuccess)
    ncclCommAbort(comm_);  // peers may be gone: do not wait for them
  else
    ncclCommDestroy(comm_);
}

c10::intrusive_ptr<c10d::ProcessGroup> ProcessGroupWeft::create(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                                int size, const std::chrono::duration<float>& timeout) {
  return c10::make_intrusive<ProcessGroupWeft>(store, rank, size,
                                               std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
}

std::string ProcessGroupWeft::failure(ncclResult_t result) const {
  return std::string("weft: ") + ncclGetErrorString(result) + ": " + ncclGetLastError(comm_);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::enqueue(c10d::OpType type, std::vector<at::Tensor> outputs,
                                                         std::function<ncclResult_t()> run) {
  auto work = c10::make_intrusive<WorkWeft>(getRank(), type, std::move(outputs));
  work->setQueue(queue_);
  Operation operation;
  operation.run = [this, run = std::move(run)]() -> std::string {
    ncclResult_t result = run();
    return result == ncclSuccess ? std::string() : failure(result);
  };
  operation.works.push_back(work);
  queue_->push(std::move(operation));
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::broadcast(std::vector<at::Tensor>& tensors,
                                                           const c10d::BroadcastOptions& opts) {
  checkSingle(tensors, "broadcast tensor");
  checkRank(opts.rootRank, getSize(), "broadcast root");
  at::Tensor t = tensors[0];
  const int root = static_cast<int>(opts.rootRank);
  return enqueue(c10d::OpType::BROADCAST, {t}, [this, t, root]() mutable {
    return ncclBroadcast(t.data_ptr(), t.data_ptr(), t.numel(), ncclTypeOf(t), root, comm_, nullptr);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::allreduce(std::vector<at::Tensor>& tensors,
                                                           const c10d::AllreduceOptions& opts) {
  checkSingle(tensors, "all_reduce tensor");
  at::Tensor t = tensors[0];
  c10d::ReduceOp op = opts.reduceOp;
  ncclTypeOf(t);  // an unsupported dtype fails here, in the caller's thread
  allReducePayloadBytes_ += t.nbytes();
  return enqueue(c10d::OpType::ALLREDUCE, {t}, [this, t, op]() mutable {
    bool created = false;
    ncclRedOp_t nccl = ncclOpOf(op, t, comm_, &created);
    ncclResult_t result = ncclAllReduce(t.data_ptr(), t.data_ptr(), t.numel(), ncclTypeOf(t), nccl, comm_, nullptr);
    if (created) ncclRedOpDestroy(nccl, comm_);
    return result;
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                     const c10d::AllreduceCoalescedOptions& opts) {
  TORCH_CHECK(!tensors.empty(), "weft: all_reduce_coalesced needs at least one tensor");
  for (const at::Tensor& t : tensors) {
    checkCpuContiguous(t, "all_reduce_coalesced tensors");
    ncclTypeOf(t);
    allReducePayloadBytes_ += t.nbytes();
  }
  c10d::ReduceOp op = opts.reduceOp;
  return enqueue(c10d::OpType::ALLREDUCE_COALESCED, tensors, [this, tensors, op]() mutable {
    std::vector<std::pair<ncclRedOp_t, bool>> ops;
    WeftGroup group;
    for (at::Tensor& t : tensors) {
      bool created = false;
      ncclRedOp_t nccl = ncclOpOf(op, t, comm_, &created);
      ops.emplace_back(nccl, created);
      group.add(ncclAllReduce(t.data_ptr(), t.data_ptr(), t.numel(), ncclTypeOf(t), nccl, comm_, nullptr));
    }
    ncclResult_t result = group.end();
    for (auto& [nccl, created] : ops)
      if (created) ncclRedOpDestroy(nccl, comm_);
    return result;
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::reduce(std::vector<at::Tensor>& tensors,
                                                        const c10d::ReduceOptions& opts) {
  checkSingle(tensors, "reduce tensor");
  checkRank(opts.rootRank, getSize(), "reduce root");
  at::Tensor t = tensors[0];
  c10d::ReduceOp op = opts.reduceOp;
  const int root = static_cast<int>(opts.rootRank);
  ncclTypeOf(t);
  return enqueue(c10d::OpType::REDUCE, {t}, [this, t, op, root]() mutable {
    bool created = false;
    ncclRedOp_t nccl = ncclOpOf(op, t, comm_, &created);
    ncclResult_t result = ncclReduce(t.data_ptr(), t.data_ptr(), t.numel(), ncclTypeOf(t), nccl, root, comm_, nullptr);
    if (created) ncclRedOpDestroy(nccl, comm_);
    return result;
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::allgather(std::vector<std::vector<at::Tensor>>& outputTensors,
                                                           std::vector<at::Tensor>& inputTensors,
                                                           const c10d::AllgatherOptions&) {
  checkSingle(inputTensors, "all_gather input");
  TORCH_CHECK(outputTensors.size() == 1 && outputTensors[0].size() == static_cast<size_t>(getSize()),
              "weft: all_gather needs one output list of ", getSize(), " tensors");
  at::Tensor input = inputTensors[0];
  std::vector<at::Tensor> outputs = outputTensors[0];
  checkSameShape(outputs, input, "all_gather outputs");
  return enqueue(c10d::OpType::ALLGATHER, outputs, [this, input, outputs]() mutable {
    at::Tensor flat = at::empty({static_cast<int64_t>(outputs.size()) * input.numel()}, input.options());
    ncclResult_t result =
        ncclAllGather(input.data_ptr(), flat.data_ptr(), input.numel(), ncclTypeOf(input), comm_, nullptr);
    if (result != ncclSuccess) return result;
    for (size_t r = 0; r < outputs.size(); ++r)
      outputs[r].view(-1).copy_(flat.narrow(0, static_cast<int64_t>(r) * input.numel(), input.numel()));
    return ncclSuccess;
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::_allgather_base(at::Tensor& outputBuffer, at::Tensor& inputBuffer,
                                                                 const c10d::AllgatherOptions&) {
  checkCpuContiguous(inputBuffer, "all_gather_into_tensor input");
  checkCpuContiguous(outputBuffer, "all_gather_into_tensor output");
  TORCH_CHECK(outputBuffer.scalar_type() == inputBuffer.scalar_type() &&
                  outputBuffer.numel() == inputBuffer.numel() * getSize(),
              "weft: all_gather_into_tensor's output must hold world_size times the input, of the same dtype");
  at::Tensor input = inputBuffer, output = outputBuffer;
  return enqueue(c10d::OpType::_ALLGATHER_BASE, {output}, [this, input, output]() mutable {
    return ncclAllGather(input.data_ptr(), output.data_ptr(), input.numel(), ncclTypeOf(input), comm_, nullptr);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::gather(std::vector<std::vector<at::Tensor>>& outputTensors,
                                                        std::vector<at::Tensor>& inputTensors,
                                                        const c10d::GatherOptions& opts) {
  checkSingle(inputTensors, "gather input");
  checkRank(opts.rootRank, getSize(), "gather root");
  const int root = static_cast<int>(opts.rootRank);
  at::Tensor input = inputTensors[0];
  std::vector<at::Tensor> outputs;
  if (getRank() == root) {
    TORCH_CHECK(outputTensors.size() == 1 && outputTensors[0].size() == static_cast<size_t>(getSize()),
                "weft: gather needs, on the root, one output list of ", getSize(), " tensors");
    outputs = outputTensors[0];
    checkSameShape(outputs, input, "gather outputs");
  } else {
    TORCH_CHECK(outputTensors.empty() || outputTensors[0].empty(), "weft: gather takes outputs on the root only");
  }
  return enqueue(c10d::OpType::GATHER, outputs, [this, input, outputs, root]() mutable {
    at::Tensor flat;
    if (!outputs.empty()) flat = at::empty({static_cast<int64_t>(outputs.size()) * input.numel()}, input.options());
    ncclResult_t result = ncclGather(input.data_ptr(), flat.defined() ? flat.data_ptr() : nullptr, input.numel(),
                                     ncclTypeOf(input), root, comm_, nullptr);
    if (result != ncclSuccess) return result;
    for (size_t r = 0; r < outputs.size(); ++r)
      outputs[r].view(-1).copy_(flat.narrow(0, static_cast<int64_t>(r) * input.numel(), input.numel()));
    return ncclSuccess;
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::scatter(std::vector<at::Tensor>& outputTensors,
                                                         std::vector<std::vector<at::Tensor>>& inputTensors,
                                                         const c10d::ScatterOptions& opts) {
  checkSingle(outputTensors, "scatter output");
  checkRank(opts.rootRank, getSize(), "scatter root");
  const int root = static_cast<int>(opts.rootRank);
  at::Tensor output = outputTensors[0];
  at::Tensor flat;
  if (getRank() == root) {
    TORCH_CHECK(inputTensors.size() == 1 && inputTensors[0].size() == static_cast<size_t>(getSize()),
                "weft: scatter needs, on the root, one input list of ", getSize(), " tensors");
    checkSameShape(inputTensors[0], output, "scatter inputs");
    std::vector<at::Tensor> views;
    for (const at::Tensor& t : inputTensors[0]) views.push_back(t.view(-1));
    flat = at::cat(views);  // taken now: the caller may reuse its list once the call returns
  } else {
    TORCH_CHECK(inputTensors.empty() || inputTensors[0].empty(), "weft: scatter takes inputs on the root only");
  }
  return enqueue(c10d::OpType::SCATTER, {output}, [this, flat, output, root]() mutable {
    return ncclScatter(flat.defined() ? flat.data_ptr() : nullptr, output.data_ptr(), output.numel(),
                       ncclTypeOf(output), root, comm_, nullptr);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::reduce_scatter(std::vector<at::Tensor>& outputTensors,
                                                                std::vector<std::vector<at::Tensor>>& inputTensors,
                                                                const c10d::ReduceScatterOptions& opts) {
  checkSingle(outputTensors, "reduce_scatter output");
  at::Tensor output = outputTensors[0];
  TORCH_CHECK(inputTensors.size() == 1 && inputTensors[0].size() == static_cast<size_t>(getSize()),
              "weft: reduce_scatter needs one input list of ", getSize(), " tensors");
  checkSameShape(inputTensors[0], output, "reduce_scatter inputs");
  std::vector<at::Tensor> views;
  for (const at::Tensor& t : inputTensors[0]) views.push_back(t.view(-1));
  at::Tensor flat = at::cat(views);
  c10d::ReduceOp op = opts.reduceOp;
  return enqueue(c10d::OpType::REDUCE_SCATTER, {output}, [this, flat, output, op]() mutable {
    bool created = false;
    ncclRedOp_t nccl = ncclOpOf(op, output, comm_, &created);
    ncclResult_t result =
        ncclReduceScatter(flat.data_ptr(), output.data_ptr(), output.numel(), ncclTypeOf(output), nccl, comm_, nullptr);
    if (created) ncclRedOpDestroy(nccl, comm_);
    return result;
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::_reduce_scatter_base(at::Tensor& outputBuffer, at::Tensor& inputBuffer,
                                                                      const c10d::ReduceScatterOptions& opts) {
  checkCpuContiguous(inputBuffer, "reduce_scatter_tensor input");
  checkCpuContiguous(outputBuffer, "reduce_scatter_tensor output");
  TORCH_CHECK(outputBuffer.scalar_type() == inputBuffer.scalar_type() &&
                  inputBuffer.numel() == outputBuffer.numel() * getSize(),
              "weft: reduce_scatter_tensor's input must hold world_size times the output, of the same dtype");
  at::Tensor input = inputBuffer, output = outputBuffer;
  c10d::ReduceOp op = opts.reduceOp;
  return enqueue(c10d::OpType::_REDUCE_SCATTER_BASE, {output}, [this, input, output, op]() mutable {
    bool created = false;
    ncclRedOp_t nccl = ncclOpOf(op, output, comm_, &created);
    ncclResult_t result = ncclReduceScatter(input.data_ptr(), output.data_ptr(), output.numel(), ncclTypeOf(output),
                                            nccl, comm_, nullptr);
    if (created) ncclRedOpDestroy(nccl, comm_);
    return result;
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::alltoall_base(at::Tensor& outputBuffer, at::Tensor& inputBuffer,
                                                               std::vector<int64_t>& outputSplitSizes,
                                                               std::vector<int64_t>& inputSplitSizes,
                                                               const c10d::AllToAllOptions&) {
  checkCpuContiguous(inputBuffer, "all_to_all_single input");
  checkCpuContiguous(outputBuffer, "all_to_all_single output");
  TORCH_CHECK(outputBuffer.scalar_type() == inputBuffer.scalar_type(),
              "weft: all_to_all_single's input and output must have the same dtype");
  const int n = getSize();
  at::Tensor input = inputBuffer, output = outputBuffer;
  // Elements per row of dim 0; an empty split list means equal blocks.
  const int64_t rowIn = input.dim() ? input.numel() / std::max<int64_t>(input.size(0), 1) : 1;
  const int64_t rowOut = output.dim() ? output.numel() / std::max<int64_t>(output.size(0), 1) : 1;
  auto splits = [n](const std::vector<int64_t>& given, const at::Tensor& t, int64_t row, const char* what) {
    std::vector<int64_t> counts(n);
    if (given.empty()) {
      TORCH_CHECK(t.numel() % n == 0, "weft: all_to_all_single's ", what, " does not split evenly in ", n);
      std::fill(counts.begin(), counts.end(), t.numel() / n);
    } else {
      TORCH_CHECK(given.size() == static_cast<size_t>(n), "weft: all_to_all_single's ", what, " split sizes need ", n,
                  " entries");
      for (int r = 0; r < n; ++r) counts[r] = given[r] * row;
      TORCH_CHECK(std::accumulate(counts.begin(), counts.end(), int64_t{0}) == t.numel(), "weft: all_to_all_single's ",
                  what, " split sizes do not add up to the tensor");
    }
    return counts;
  };
  std::vector<int64_t> sendCounts = splits(inputSplitSizes, input, rowIn, "input");
  std::vector<int64_t> recvCounts = splits(outputSplitSizes, output, rowOut, "output");
  return enqueue(c10d::OpType::ALLTOALL_BASE, {output}, [this, input, output, sendCounts, recvCounts, n]() mutable {
    const ncclDataType_t type = ncclTypeOf(input);
    const size_t elementSize = input.element_size();
    auto* send = static_cast<char*>(input.data_ptr());
    auto* recv = static_cast<char*>(output.data_ptr());
    WeftGroup group;
    int64_t sendOffset = 0, recvOffset = 0;
    for (int r = 0; r < n; ++r) {
      group.add(ncclSend(send + sendOffset * elementSize, sendCounts[r], type, r, comm_, nullptr));
      group.add(ncclRecv(recv + recvOffset * elementSize, recvCounts[r], type, r, comm_, nullptr));
      sendOffset += sendCounts[r];
      recvOffset += recvCounts[r];
    }
    return group.end();
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::alltoall(std::vector<at::Tensor>& outputTensors,
                                                          std::vector<at::Tensor>& inputTensors,
                                                          const c10d::AllToAllOptions&) {
  const int n = getSize();
  TORCH_CHECK(outputTensors.size() == static_cast<size_t>(n) && inputTensors.size() == static_cast<size_t>(n),
              "weft: all_to_all needs ", n, " input and ", n, " output tensors");
  for (int r = 0; r < n; ++r) {
    checkCpuContiguous(inputTensors[r], "all_to_all inputs");
    checkCpuContiguous(outputTensors[r], "all_to_all outputs");
    TORCH_CHECK(inputTensors[r].scalar_type() == outputTensors[0].scalar_type() &&
                    outputTensors[r].scalar_type() == outputTensors[0].scalar_type(),
                "weft: all_to_all's tensors must share one dtype");
  }
  std::vector<at::Tensor> inputs = inputTensors, outputs = outputTensors;
  return enqueue(c10d::OpType::ALLTOALL, outputs, [this, inputs, outputs, n]() mutable {
    WeftGroup group;
    for (int r = 0; r < n; ++r) {
      group.add(ncclSend(inputs[r].data_ptr(), inputs[r].numel(), ncclTypeOf(inputs[r]), r, comm_, nullptr));
      group.add(ncclRecv(outputs[r].data_ptr(), outputs[r].numel(), ncclTypeOf(outputs[r]), r, comm_, nullptr));
    }
    return group.end();
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::send(std::vector<at::Tensor>& tensors, int dstRank, int /*tag*/) {
  checkSingle(tensors, "send tensor");
  checkRank(dstRank, getSize(), "send destination");
  at::Tensor t = tensors[0];
  return pointToPoint(c10d::OpType::SEND, t, [this, t, dstRank]() mutable {
    return ncclSend(t.data_ptr(), t.numel(), ncclTypeOf(t), dstRank, comm_, nullptr);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::recv(std::vector<at::Tensor>& tensors, int srcRank, int /*tag*/) {
  checkSingle(tensors, "recv tensor");
  checkRank(srcRank, getSize(), "recv source");
  at::Tensor t = tensors[0];
  return pointToPoint(c10d::OpType::RECV, t, [this, t, srcRank]() mutable {
    return ncclRecv(t.data_ptr(), t.numel(), ncclTypeOf(t), srcRank, comm_, nullptr);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::pointToPoint(c10d::OpType type, const at::Tensor& tensor,
                                                              std::function<ncclResult_t()> call) {
  if (!coalescing_) return enqueue(type, {tensor}, std::move(call));
  auto work = c10::make_intrusive<WorkWeft>(getRank(), type, std::vector<at::Tensor>{tensor});
  work->setQueue(queue_);
  coalescedCalls_.push_back(std::move(call));
  coalescedWorks_.push_back(work);
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::recvAnysource(std::vector<at::Tensor>&, int) {
  TORCH_CHECK(false, "weft: recv from any source is not supported (NCCL has no wildcard receive); name the source");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::barrier(const c10d::BarrierOptions&) {
  at::Tensor t = barrierTensor_;
  return enqueue(c10d::OpType::BARRIER, {}, [this, t]() mutable {
    return ncclAllReduce(t.data_ptr(), t.data_ptr(), 1, ncclUint8, ncclMax, comm_, nullptr);
  });
}

void ProcessGroupWeft::startCoalescing() {
  TORCH_CHECK(!coalescing_, "weft: coalescing windows do not nest");
  coalescing_ = true;
}

void ProcessGroupWeft::endCoalescing(std::vector<c10::intrusive_ptr<c10d::Work>>& /*reqs*/) {
  TORCH_CHECK(coalescing_, "weft: endCoalescing without startCoalescing");
  coalescing_ = false;
  Operation operation;
  operation.run = [this, calls = std::move(coalescedCalls_)]() -> std::string {
    WeftGroup group;
    for (const auto& call : calls) group.add(call());
    ncclResult_t result = group.end();
    return result == ncclSuccess ? std::string() : failure(result);
  };
  operation.works = std::move(coalescedWorks_);
  coalescedCalls_.clear();
  coalescedWorks_.clear();
  if (!operation.works.empty()) queue_->push(std::move(operation));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::allreduceCompressed(at::Tensor& tensor,
                                                                     const weftCompressor_t& compressor,
                                                                     weftErrorFeedback_t residual, bool average) {
  checkCpuContiguous(tensor, "compressed all_reduce tensor");
  TORCH_CHECK(
      tensor.scalar_type() == at::kFloat || tensor.scalar_type() == at::kHalf || tensor.scalar_type() == at::kBFloat16,
      "weft: compressed all-reduce takes float32, float16 or bfloat16 tensors");
  at::Tensor t = tensor;
  return enqueue(c10d::OpType::ALLREDUCE, {t}, [this, t, compressor, residual, average]() mutable {
    return weftAllReduceCompressed(t.data_ptr(), t.data_ptr(), t.numel(), ncclTypeOf(t), average ? ncclAvg : ncclSum,
                                   &compressor, residual, comm_, nullptr);
  });
}

}  // namespace weft_torch
