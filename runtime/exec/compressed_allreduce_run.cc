#include "runtime/exec/compressed_allreduce_run.h"

#include "algorithms/builders/compressed_allreduce.h"
#include "common/dtype.h"
#include "common/log.h"
#include "common/status.h"
#include "compression/rng.h"
#include "runtime/comm/communicator.h"
#include "runtime/exec/call_schedule.h"
#include "runtime/exec/plan_cache.h"

namespace weft {

using compression::splitmix64;

namespace {

// The codec `call` runs with: weftAllReduceCompressed's, or WEFT_COMPRESSION's for an eligible
// all-reduce. False: run the call exactly.
bool chooseCodec(const CollectiveCall& call, compression::CodecConfig* codec) {
  ncclComm* comm = call.comm;
  if (call.kind != Collective::AllReduce || comm->nranks < 2 || call.count == 0) return false;
  if (call.compressed) {
    *codec = call.codec;
    return true;
  }
  const CompressionConfig& env = comm->compression.env;
  const bool sumOrAverage = call.op == ncclSum || call.op == ncclAvg;
  if (!env.enabled || !sumOrAverage || !compression::isCodecDataType(call.datatype) ||
      call.count * dataTypeSize(call.datatype) < env.minBytes)
    return false;
  *codec = env.codec;
  return true;
}

// The communicator's codec for `config`, sized for its slices, made on first use. *out stays
// null when one block does not fit a slice: an error for weftAllReduceCompressed, otherwise the
// call runs exactly.
ncclResult_t codecFor(const CollectiveCall& call, const compression::CodecConfig& config, compression::Codec** out) {
  *out = nullptr;
  ncclComm* comm = call.comm;
  CommCompression& state = comm->compression;
  for (auto& e : state.codecs)
    if (sameCodecConfig(e.config, config) && e.slotBytes == comm->net.sliceBytes) *out = e.codec.get();
  if (*out) return ncclSuccess;
  size_t sliceElements = compressedSliceElements(config, comm->net.sliceBytes);
  if (sliceElements == 0) {
    if (call.compressed)
      return fail(ncclInvalidUsage,
                  "weftAllReduceCompressed: one %s block does not fit a transport slot "
                  "of %zu bytes",
                  compression::codecName(config.kind), comm->net.sliceBytes);
    return ncclSuccess;
  }
  CommCompression::CodecEntry fresh;
  fresh.config = config;
  fresh.slotBytes = comm->net.sliceBytes;
  WEFT_CHECK(compression::Codec::create(config, sliceElements, &fresh.codec));
  state.codecs.push_back(std::move(fresh));
  *out = state.codecs.back().codec.get();
  return ncclSuccess;
}

// The error-feedback residual: the caller's (weftAllReduceCompressed), or with
// WEFT_COMPRESSION's ",ef" the communicator's for this send buffer and count; null without
// error feedback.
float* residualFor(const CollectiveCall& call) {
  if (call.compressed) return call.residual;
  CommCompression& state = call.comm->compression;
  if (!state.env.errorFeedback) return nullptr;
  const void* buffer = call.callerSendbuff ? call.callerSendbuff : call.sendbuff;
  auto& r = state.feedback[{reinterpret_cast<uintptr_t>(buffer), call.count}];
  if (r.size() != call.count) r.assign(call.count, 0.0f);
  return r.data();
}

// The compressed schedule of `call`, from the communicator's plan cache when the shape repeats.
const PreparedSchedule* compressedPlanFor(const CollectiveCall& call, const compression::CodecConfig& codec) {
  ncclComm* comm = call.comm;
  const PlanKey key = planKeyFor(call, PlanPath::Compressed, codec);
  if (const PreparedSchedule* cached = comm->exec.planCache.find(key)) return cached;
  CompressedAllReduceParams params;
  params.count = call.count;
  params.elementSize = dataTypeSize(call.datatype);
  params.rank = comm->rank;
  params.ringOrder = comm->layout.ringOrder;
  params.average = call.op == ncclAvg;
  params.codec = codec;
  params.slotBytes = comm->net.sliceBytes;
  PreparedSchedule plan;
  prepareSchedule(buildCompressedAllReduce(params), sendAliasesRecv(call), comm->net.sliceBytes, &plan);
  plan.algorithm = compressedAlgorithmFor(codec) == CompressedAlgorithm::QuantizedRing ? "compressed quantized ring"
                                                                                       : "compressed all-gather";
  const PreparedSchedule* stored = comm->exec.planCache.insert(key, std::move(plan));
  const bool quantizedRing = compressedAlgorithmFor(codec) == CompressedAlgorithm::QuantizedRing;
  WEFT_INFO(kLogColl | kLogTune, "AllReduce: %zu x %s op %s -> compressed %s (%s), %zu steps, slices of %zu elements",
            call.count, dataTypeName(call.datatype), call.op == ncclAvg ? "avg" : "sum",
            compression::codecName(codec.kind), quantizedRing ? "quantized ring" : "all-gather",
            stored->schedule.steps.size(), stored->schedule.codecSliceElements);
  return stored;
}

// This call's seed for stochastic rounding and top-k sampling: the caller's, varied by call and
// rank.
uint64_t runSeed(const CollectiveCall& call) {
  const ncclComm* comm = call.comm;
  const uint64_t seed = call.compressed ? call.codecSeed : 0;
  return seed ^ splitmix64(comm->exec.collectiveSequence) ^ splitmix64(0x5eedull + static_cast<uint64_t>(comm->rank));
}

}  // namespace

ncclResult_t prepareCompressedAllReduce(const CollectiveCall& call, CompressedRunSetup* setup) {
  *setup = CompressedRunSetup{};
  compression::CodecConfig config;
  if (!chooseCodec(call, &config)) return ncclSuccess;
  compression::Codec* codec = nullptr;
  WEFT_CHECK(codecFor(call, config, &codec));
  if (!codec) return ncclSuccess;
  setup->codec.residual = residualFor(call);
  setup->plan = compressedPlanFor(call, config);
  setup->codec.codec = codec;
  setup->codec.seed = runSeed(call);
  return ncclSuccess;
}

bool compressedAllReduceWanted(const CollectiveCall& call) {
  compression::CodecConfig unused;
  return chooseCodec(call, &unused);
}

}  // namespace weft
