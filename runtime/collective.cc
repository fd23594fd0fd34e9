#include "runtime/collective.h"

#include <algorithm>
#include <deque>

#include "algorithms/direct_allreduce.h"
#include "algorithms/ring_allreduce.h"
#include "common/dtype.h"
#include "common/env.h"
#include "common/log.h"
#include "common/status.h"
#include "runtime/communicator.h"
#include "runtime/direct_path.h"
#include "runtime/idle_waiter.h"

namespace weft {

const char* collectiveName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::AllReduce: return "AllReduce";
  }
  return "?";
}

namespace {

ReduceOp toReduceOp(ncclRedOp_t op) {
  switch (op) {
    case ncclProd: return ReduceOp::Prod;
    case ncclMax: return ReduceOp::Max;
    case ncclMin: return ReduceOp::Min;
    default: return ReduceOp::Sum;  // sum, and avg (sum, then divide)
  }
}

uint64_t planKey(const CollectiveCall& call, bool direct) {
  uint64_t key = call.count * 2 + (direct ? 1 : 0);
  key = key * 31 + static_cast<uint64_t>(call.datatype);
  key = key * 31 + static_cast<uint64_t>(call.op == ncclAvg);
  key = key * 31 + static_cast<uint64_t>(call.kind);
  key = key * 2 + (call.sendbuff == call.recvbuff ? 1 : 0);
  return key;
}

Schedule buildSchedule(const CollectiveCall& call, bool direct) {
  ncclComm* comm = call.comm;
  switch (call.kind) {
    case CollectiveKind::AllReduce: {
      if (direct)
        return buildDirectAllReduce({call.count, dataTypeSize(call.datatype), comm->rank, comm->nranks, call.op == ncclAvg});
      RingAllReduceParams params;
      params.count = call.count;
      params.elementSize = dataTypeSize(call.datatype);
      params.rank = comm->rank;
      params.ringOrder = comm->ringOrder;
      params.average = call.op == ncclAvg;
      return buildRingAllReduce(params);
    }
  }
  return {};
}

// The prepared schedule for `call`, from the communicator's small cache when the shape repeats.
const PreparedSchedule* planFor(const CollectiveCall& call, bool direct) {
  ncclComm* comm = call.comm;
  uint64_t key = planKey(call, direct);
  for (auto& entry : comm->planCache)
    if (entry.key == key) return &entry.plan;
  auto& entry = comm->planCache[comm->planCacheNext++ % 4];
  entry.key = ~0ull;
  prepareSchedule(buildSchedule(call, direct), call.sendbuff == call.recvbuff, comm->sliceBytes, &entry.plan);
  entry.key = key;
  WEFT_INFO(kLogTune | kLogColl, "%s: %zu x %s op %s -> algorithm %s, %zu steps, slices of %zu bytes",
            collectiveName(call.kind), call.count, dataTypeName(call.datatype), redOpName(call.op),
            direct ? "DIRECT (shared buffers)" : "RING",
            entry.plan.schedule.steps.size(), entry.plan.sliceBytes);
  return &entry.plan;
}

std::vector<int> peersOf(const Schedule& schedule) {
  std::vector<int> peers;
  for (const Step& s : schedule.steps)
    if (s.peer >= 0 && std::find(peers.begin(), peers.end(), s.peer) == peers.end()) peers.push_back(s.peer);
  std::sort(peers.begin(), peers.end());
  return peers;
}

// The calls of one communicator, run one after another in call order.
struct CommQueue {
  ncclComm* comm;
  std::deque<const CollectiveCall*> pending;
  std::unique_ptr<CollectiveRun> running;
  const CollectiveCall* handshakeFor = nullptr;  // the running run is this call's descriptor exchange
};

ncclResult_t startRun(CommQueue& queue, const CollectiveCall& call, const PreparedSchedule* plan,
                      const RunBuffers& buffers, const char* name) {
  ncclComm* comm = call.comm;
  WEFT_CHECK(connectPeers(comm, peersOf(plan->schedule)));
  uint64_t sequence = comm->collectiveSequence++;
  WEFT_TRACE(kLogColl, "%s #%llu count %zu datatype %d op %d sendbuff %p recvbuff %p", collectiveName(call.kind),
             (unsigned long long)sequence, call.count, call.datatype, call.op, call.sendbuff, call.recvbuff);
  queue.running = std::make_unique<CollectiveRun>(plan, comm->connectionTable.data(), buffers,
                                                  RunReduction{call.datatype, toReduceOp(call.op)}, name, sequence);
  return ncclSuccess;
}

// Starts the queue's next call (or the direct-path handshake that decides how to run it).
ncclResult_t startNext(CommQueue& queue) {
  queue.running.reset();
  if (queue.handshakeFor) {
    const CollectiveCall& call = *queue.handshakeFor;
    queue.handshakeFor = nullptr;
    bool direct = false;
    RunBuffers buffers;
    WEFT_CHECK(concludeDirectHandshake(call, &direct, &buffers));
    return startRun(queue, call, planFor(call, direct), buffers, collectiveName(call.kind));
  }
  if (queue.pending.empty()) return ncclSuccess;
  const CollectiveCall& call = *queue.pending.front();
  queue.pending.pop_front();
  if (directPathEligible(call)) {
    const PreparedSchedule* plan = nullptr;
    RunBuffers buffers;
    WEFT_CHECK(beginDirectHandshake(call, &plan, &buffers));
    queue.handshakeFor = &call;
    return startRun(queue, call, plan, buffers, "DirectHandshake");
  }
  RunBuffers buffers{static_cast<const char*>(call.sendbuff), static_cast<char*>(call.recvbuff), nullptr};
  return startRun(queue, call, planFor(call, false), buffers, collectiveName(call.kind));
}

}  // namespace

ncclResult_t runCollectives(const std::vector<CollectiveCall>& calls) {
  std::vector<CommQueue> queues;
  for (const auto& call : calls) {
    auto it = std::find_if(queues.begin(), queues.end(), [&](const CommQueue& q) { return q.comm == call.comm; });
    if (it == queues.end()) {
      queues.push_back({call.comm, {}, nullptr, nullptr});
      it = queues.end() - 1;
    }
    it->pending.push_back(&call);
  }
  std::vector<ncclComm*> comms;
  for (auto& q : queues) {
    comms.push_back(q.comm);
    q.comm->activeCalls.fetch_add(1);
  }
  auto finish = [&](ncclResult_t result, ncclComm* culprit) {
    if (result != ncclSuccess) setCommunicatorError(culprit ? culprit : comms.front(), result);
    for (auto* c : comms) c->activeCalls.fetch_sub(1);
    return result;
  };

  for (auto& q : queues) {
    ncclResult_t result = startNext(q);
    if (result != ncclSuccess) return finish(result, q.comm);
  }
  IdleWaiter waiter(timeoutSeconds());
  std::vector<CollectiveRun*> active;
  ncclComm* culprit = nullptr;
  // One pass over every running collective; starts each queue's next call as one finishes.
  auto progressAll = [&](bool* progressed) -> ncclResult_t {
    for (auto& q : queues) {
      while (q.running) {
        culprit = q.comm;
        WEFT_CHECK(q.running->progress(progressed));
        if (!q.running->done()) break;
        WEFT_CHECK(startNext(q));
        *progressed = true;
      }
    }
    return ncclSuccess;
  };
  for (;;) {
    bool progressed = false;
    ncclResult_t result = progressAll(&progressed);
    if (result != ncclSuccess) return finish(result, culprit);
    active.clear();
    for (auto& q : queues)
      if (q.running) active.push_back(q.running.get());
    if (active.empty()) return finish(ncclSuccess, nullptr);
    if (progressed) {
      waiter.madeProgress();
      continue;
    }
    result = waiter.idle(active, comms, progressAll);
    if (result != ncclSuccess) return finish(result, culprit ? culprit : comms.front());
  }
}

}  // namespace weft
