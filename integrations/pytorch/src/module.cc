// The Python module behind weft_torch: the process group's constructor for
// torch.distributed.Backend.register_backend, and the compressed all-reduce the DDP
// communication hook uses.
#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>

#include "process_group_weft.h"

namespace py = pybind11;
using weft_torch::ProcessGroupWeft;

namespace {

// Error-feedback state for one gradient bucket, owned by Python.
class ErrorFeedback {
 public:
  explicit ErrorFeedback(size_t count) {
    TORCH_CHECK(weftErrorFeedbackCreate(count, &state_) == ncclSuccess, "weft: ", ncclGetLastError(nullptr));
  }
  ~ErrorFeedback() { weftErrorFeedbackDestroy(state_); }
  ErrorFeedback(const ErrorFeedback&) = delete;
  weftErrorFeedback_t get() const { return state_; }

 private:
  weftErrorFeedback_t state_ = nullptr;
};

weftCompressor_t compressorFor(const std::string& codec, double topkRatio, unsigned blockSize, bool stochastic,
                               uint64_t seed) {
  weftCompressor_t c = WEFT_COMPRESSOR_INITIALIZER;
  if (codec == "fp16") {
    c.codec = weftCodecFp16;
  } else if (codec == "bf16") {
    c.codec = weftCodecBf16;
  } else if (codec == "int8") {
    c.codec = weftCodecInt8;
  } else if (codec == "int4") {
    c.codec = weftCodecInt4;
  } else if (codec == "sign") {
    c.codec = weftCodecSign;
  } else if (codec == "topk") {
    c.codec = weftCodecTopK;
  } else if (codec == "topk_approx") {
    c.codec = weftCodecTopKApprox;
  } else {
    TORCH_CHECK(false, "weft: unknown codec '", codec, "' (fp16, bf16, int8, int4, sign, topk, topk_approx)");
  }
  c.topkRatio = topkRatio;
  c.blockSize = blockSize;
  c.rounding = stochastic ? weftRoundStochastic : weftRoundNearest;
  c.seed = seed;
  return c;
}

}  // namespace

PYBIND11_MODULE(_weft_torch, m) {
  py::module::import("torch.distributed");  // registers c10d's types, ProcessGroup among them
  m.doc() = "weft's torch.distributed backend (see weft_torch/__init__.py)";
  m.def("create_process_group", &ProcessGroupWeft::create, py::arg("store"), py::arg("rank"), py::arg("size"),
        py::arg("timeout"), py::call_guard<py::gil_scoped_release>());

  m.def(
      "all_reduce_payload_bytes",
      [](const c10::intrusive_ptr<c10d::ProcessGroup>& group) {
        auto* weft = dynamic_cast<ProcessGroupWeft*>(group.get());
        TORCH_CHECK(weft, "weft: not a process group of backend \"weft\"");
        return weft->allReducePayloadBytes();
      },
      py::arg("group"));

  m.def("split_for_new_group", &ProcessGroupWeft::splitForNewGroup, py::arg("parent"), py::arg("members"),
        py::call_guard<py::gil_scoped_release>());
  m.def("discard_pending_split", &ProcessGroupWeft::discardPendingSplit);
  m.def("adopted_split_count", &ProcessGroupWeft::adoptedSplitCount);

  py::class_<ErrorFeedback>(m, "ErrorFeedback").def(py::init<size_t>(), py::arg("count"));

  m.def(
      "allreduce_compressed",
      [](const c10::intrusive_ptr<c10d::ProcessGroup>& group, at::Tensor tensor, const std::string& codec,
         double topkRatio, unsigned blockSize, bool stochastic, uint64_t seed, ErrorFeedback* feedback, bool average) {
        auto* weft = dynamic_cast<ProcessGroupWeft*>(group.get());
        TORCH_CHECK(weft, "weft: the compressed all-reduce needs a process group of backend \"weft\"");
        const weftCompressor_t compressor = compressorFor(codec, topkRatio, blockSize, stochastic, seed);
        return weft->allreduceCompressed(tensor, compressor, feedback ? feedback->get() : nullptr, average);
      },
      py::arg("group"), py::arg("tensor"), py::arg("codec"), py::arg("topk_ratio") = 0.01, py::arg("block_size") = 256,
      py::arg("stochastic") = false, py::arg("seed") = 0, py::arg("feedback") = nullptr, py::arg("average") = true);
}
