// weftAllReduceCompressed and the error-feedback state objects (include/weft/compression.h).
#include <cstring>
#include <new>
#include <vector>

#include "common/status.h"
#include "compression/codec.h"
#include "nccl.h"
#include "runtime/api/api_call.h"
#include "runtime/api/argument_checks.h"
#include "runtime/api/export.h"
#include "runtime/comm/communicator.h"
#include "runtime/exec/group.h"
#include "weft/compression.h"

using namespace weft;

struct weftErrorFeedback {
  uint64_t magic = 0x7765667445467362ull;  // kFeedbackMagic
  std::vector<float> residual;
};

namespace {

constexpr uint64_t kFeedbackMagic = 0x7765667445467362ull;

ncclResult_t checkFeedback(weftErrorFeedback_t state, const char* function) {
  if (!state) return fail(ncclInvalidArgument, "%s: state is NULL", function);
  if (state->magic != kFeedbackMagic)
    return fail(ncclInvalidArgument, "%s: state is not a live error-feedback state (destroyed or corrupt)", function);
  return ncclSuccess;
}

ncclResult_t codecConfigFrom(const weftCompressor_t* c, compression::CodecConfig* out, const char* function) {
  if (!c) return fail(ncclInvalidArgument, "%s: compressor is NULL", function);
  if (c->size < sizeof(weftCompressor_t))
    return fail(ncclInvalidArgument, "%s: compressor->size=%zu: initialize it with WEFT_COMPRESSOR_INITIALIZER",
                function, c->size);
  compression::CodecConfig config;
  switch (c->codec) {
    case weftCodecFp16: config.kind = compression::CodecKind::kFp16; break;
    case weftCodecBf16: config.kind = compression::CodecKind::kBf16; break;
    case weftCodecInt8: config.kind = compression::CodecKind::kInt8; break;
    case weftCodecInt4: config.kind = compression::CodecKind::kInt4; break;
    case weftCodecSign: config.kind = compression::CodecKind::kSign; break;
    case weftCodecTopK: config.kind = compression::CodecKind::kTopK; break;
    case weftCodecTopKApprox: config.kind = compression::CodecKind::kTopKApprox; break;
    default:
      return fail(ncclInvalidArgument, "%s: compressor->codec=%d is not a weftCodec_t", function,
                  static_cast<int>(c->codec));
  }
  config.blockSize = c->blockSize ? c->blockSize : 256;
  if (c->rounding != weftRoundNearest && c->rounding != weftRoundStochastic)
    return fail(ncclInvalidArgument, "%s: compressor->rounding=%d is not a weftRounding_t", function,
                static_cast<int>(c->rounding));
  config.rounding =
      c->rounding == weftRoundStochastic ? compression::Rounding::kStochastic : compression::Rounding::kNearest;
  config.topkRatio = c->topkRatio;
  if (compression::Codec::validate(config) != ncclSuccess)
    return fail(ncclInvalidArgument, "%s: %s", function, lastErrorMessage().c_str());
  *out = config;
  return ncclSuccess;
}

}  // namespace

WEFT_API ncclResult_t weftErrorFeedbackCreate(size_t count, weftErrorFeedback_t* state) {
  return apiCall("weftErrorFeedbackCreate", [&]() -> ncclResult_t {
    if (!state) return fail(ncclInvalidArgument, "weftErrorFeedbackCreate: state is NULL");
    auto* made = new (std::nothrow) weftErrorFeedback;
    if (!made) return fail(ncclSystemError, "weftErrorFeedbackCreate: out of memory");
    try {
      made->residual.assign(count, 0.0f);
    } catch (...) {
      delete made;
      return fail(ncclSystemError, "weftErrorFeedbackCreate: cannot allocate %zu floats", count);
    }
    *state = made;
    return ncclSuccess;
  });
}

WEFT_API ncclResult_t weftErrorFeedbackReset(weftErrorFeedback_t state) {
  return apiCall("weftErrorFeedbackReset", [&]() -> ncclResult_t {
    WEFT_CHECK(checkFeedback(state, "weftErrorFeedbackReset"));
    std::fill(state->residual.begin(), state->residual.end(), 0.0f);
    return ncclSuccess;
  });
}

WEFT_API ncclResult_t weftErrorFeedbackResidual(weftErrorFeedback_t state, const float** residual, size_t* count) {
  return apiCall("weftErrorFeedbackResidual", [&]() -> ncclResult_t {
    WEFT_CHECK(checkFeedback(state, "weftErrorFeedbackResidual"));
    if (residual) *residual = state->residual.data();
    if (count) *count = state->residual.size();
    return ncclSuccess;
  });
}

WEFT_API ncclResult_t weftErrorFeedbackDestroy(weftErrorFeedback_t state) {
  return apiCall("weftErrorFeedbackDestroy", [&]() -> ncclResult_t {
    if (!state) return ncclSuccess;
    WEFT_CHECK(checkFeedback(state, "weftErrorFeedbackDestroy"));
    state->magic = 0;
    delete state;
    return ncclSuccess;
  });
}

WEFT_API ncclResult_t weftAllReduceCompressed(const void* sendbuff, void* recvbuff, size_t count,
                                              ncclDataType_t datatype, ncclRedOp_t op,
                                              const weftCompressor_t* compressor, weftErrorFeedback_t feedback,
                                              ncclComm_t comm, cudaStream_t stream) {
  return apiCall("weftAllReduceCompressed", [&]() -> ncclResult_t {
    constexpr const char* kName = "weftAllReduceCompressed";
    WEFT_CHECK(checkCommunicator(comm));
    if (!compression::isCodecDataType(datatype))
      return fail(ncclInvalidArgument,
                  "%s: datatype %d: compressed all-reduce takes ncclFloat32, ncclFloat16 or ncclBfloat16", kName,
                  static_cast<int>(datatype));
    if (op != ncclSum && op != ncclAvg)
      return fail(ncclInvalidArgument, "%s: op %d: compressed all-reduce takes ncclSum or ncclAvg", kName,
                  static_cast<int>(op));
    WEFT_CHECK(checkCount(count, datatype, 1, "count", kName));
    WEFT_CHECK(checkBuffer(sendbuff, count, "sendbuff", kName));
    WEFT_CHECK(checkBuffer(recvbuff, count, "recvbuff", kName));
    CollectiveCall call = makeCall(Collective::AllReduce, comm, sendbuff, recvbuff, count, datatype, op);
    WEFT_CHECK(codecConfigFrom(compressor, &call.codec, kName));
    if (feedback) {
      WEFT_CHECK(checkFeedback(feedback, kName));
      if (feedback->residual.size() != count)
        return fail(ncclInvalidArgument, "%s: the error-feedback state was made for %zu elements, the call has %zu",
                    kName, feedback->residual.size(), count);
      call.residual = feedback->residual.data();
    }
    call.stream = stream;
    call.compressed = true;
    call.codecSeed = compressor->seed;
    return submitCollective(call);
  });
}
