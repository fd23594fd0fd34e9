#include "runtime/exec/compressed_allreduce_run.h"

#include "algorithms/builders/compressed_allreduce.h"
#include "common/dtype.h"
#include "common/log.h"
#include "common/status.h"
#include "compression/rng.h"
#include "runtime/exec/call_schedule.h"
#include "runtime/exec/plan_cache.h"
#include "runtime/comm/communicator.h"

namespace weft {

using compression::splitmix64;

ncclResult_t prepareCompressedAllReduce(const CollectiveCall& call, CompressedRunSetup* setup) {
  *setup = CompressedRunSetup{};
  ncclComm* comm = call.comm;
  CommCompression& state = comm->compression;
  if (call.kind != Collective::AllReduce || comm->nranks < 2 || call.count == 0) return ncclSuccess;
  compression::CodecConfig codec;
  float* residual = nullptr;
  uint64_t seed = 0;
  if (call.compressed) {
    codec = call.codec;
    residual = call.residual;
    seed = call.codecSeed;
  } else {
    const CompressionConfig& env = state.env;
    if (!env.enabled || (call.op != ncclSum && call.op != ncclAvg) || !compression::isCodecDataType(call.datatype) ||
        call.count * dataTypeSize(call.datatype) < env.minBytes)
      return ncclSuccess;
    codec = env.codec;
  }
  // The codec, sized for this communicator's slices.
  CommCompression::CodecEntry* entry = nullptr;
  for (auto& e : state.codecs)
    if (sameCodecConfig(e.config, codec) && e.slotBytes == comm->sliceBytes) entry = &e;
  if (!entry) {
    size_t sliceElements = compressedSliceElements(codec, comm->sliceBytes);
    if (sliceElements == 0) {
      if (call.compressed)
        return fail(ncclInvalidUsage, "weftAllReduceCompressed: one %s block does not fit a transport slot of %zu bytes",
                    compression::codecName(codec.kind), comm->sliceBytes);
      return ncclSuccess;
    }
    CommCompression::CodecEntry fresh;
    fresh.config = codec;
    fresh.slotBytes = comm->sliceBytes;
    WEFT_CHECK(compression::Codec::create(codec, sliceElements, &fresh.codec));
    state.codecs.push_back(std::move(fresh));
    entry = &state.codecs.back();
  }
  if (!call.compressed && state.env.errorFeedback) {
    auto& r = state.feedback[{reinterpret_cast<uintptr_t>(call.sendbuff), call.count}];
    if (r.size() != call.count) r.assign(call.count, 0.0f);
    residual = r.data();
  }
  // The prepared schedule, from the communicator's plan cache when the shape repeats.
  const PlanKey key = planKeyFor(call, PlanPath::Compressed, codec);
  const PreparedSchedule* plan = comm->planCache.find(key);
  if (!plan) {
    CompressedAllReduceParams params;
    params.count = call.count;
    params.elementSize = dataTypeSize(call.datatype);
    params.rank = comm->rank;
    params.ringOrder = comm->ringOrder;
    params.average = call.op == ncclAvg;
    params.codec = codec;
    params.slotBytes = comm->sliceBytes;
    PreparedSchedule prepared;
    prepareSchedule(buildCompressedAllReduce(params), sendAliasesRecv(call), comm->sliceBytes, &prepared);
    plan = comm->planCache.insert(key, std::move(prepared));
    WEFT_INFO(kLogColl | kLogTune, "AllReduce: %zu x %s op %s -> compressed %s (%s), %zu steps, slices of %zu elements",
              call.count, dataTypeName(call.datatype), call.op == ncclAvg ? "avg" : "sum",
              compression::codecName(codec.kind),
              compressedAlgorithmFor(codec) == CompressedAlgorithm::QuantizedRing ? "quantized ring" : "all-gather",
              plan->schedule.steps.size(), plan->schedule.codecSliceElements);
  }
  setup->plan = plan;
  setup->codec.codec = entry->codec.get();
  setup->codec.residual = residual;
  setup->codec.seed =
      seed ^ splitmix64(comm->collectiveSequence) ^ splitmix64(0x5eedull + static_cast<uint64_t>(comm->rank));
  return ncclSuccess;
}

}  // namespace weft
