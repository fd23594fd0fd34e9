#include "runtime/exec/collective.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <memory>

#include "common/cycle_clock.h"
#include "common/deadline.h"
#include "common/dtype.h"
#include "common/log.h"
#include "common/safe_file.h"
#include "common/settings.h"
#include "common/status.h"
#include "runtime/comm/communicator.h"
#include "runtime/comm/reduction_ops.h"
#include "runtime/device/staged_at_run.h"
#include "runtime/exec/call_schedule.h"
#include "runtime/exec/collective_record.h"
#include "runtime/exec/collective_trace.h"
#include "runtime/exec/compressed_allreduce_run.h"
#include "runtime/exec/direct_path.h"
#include "runtime/exec/direct_point_to_point.h"
#include "runtime/exec/idle_waiter.h"
#include "runtime/exec/one_shot.h"
#include "runtime/exec/plan_cache.h"
#include "runtime/status/remote_status.h"
#include "runtime/status/timeout_inquiry.h"

namespace weft {

size_t blockStrideBytes(const CollectiveCall& call) {
  return (call.blockStride ? call.blockStride : call.count) * dataTypeSize(call.datatype);
}

BufferSpans bufferSpans(const CollectiveCall& call) {
  const size_t block = call.count * dataTypeSize(call.datatype);
  const size_t strided = block ? blockStrideBytes(call) * static_cast<size_t>(call.comm->nranks - 1) + block : 0;
  const bool root = call.comm->rank == call.root;
  if (call.kind.isPointToPoint()) return call.kind.isSend() ? BufferSpans{block, 0} : BufferSpans{0, block};
  switch (call.kind.collective()) {
    case Collective::AllReduce: return {block, block};
    case Collective::Broadcast: return {root ? block : 0, block};
    case Collective::Reduce: return {block, root ? block : 0};
    case Collective::AllGather: return {block, strided};
    case Collective::ReduceScatter: return {strided, block};
    case Collective::AllToAll: return {strided, strided};
    case Collective::Gather: return {block, root ? strided : 0};
    case Collective::Scatter: return {root ? strided : 0, block};
    default: return {block, block};
  }
}

bool rangesOverlap(const void* a, size_t aBytes, const void* b, size_t bBytes) {
  const char* x = static_cast<const char*>(a);
  const char* y = static_cast<const char*>(b);
  return aBytes && bBytes && x < y + bBytes && y < x + aBytes;
}

bool buffersOverlap(const CollectiveCall& call) {
  const BufferSpans spans = bufferSpans(call);
  return rangesOverlap(call.sendbuff, spans.send, call.recvbuff, spans.recv);
}

namespace {

// The prepared schedule for `call`, from the communicator's plan cache when the shape repeats
// (the algorithm choice depends only on what the key holds).
ncclResult_t planFor(const CollectiveCall& call, bool direct, const PreparedSchedule** out) {
  ncclComm* comm = call.comm;
  const PlanKey key = planKeyFor(call, direct ? PlanPath::Direct : PlanPath::Selected);
  if (const PreparedSchedule* cached = comm->exec.planCache.find(key)) {
    *out = cached;
    return ncclSuccess;
  }
  Algorithm selected = Algorithm::Direct;
  if (!direct) WEFT_CHECK(selectForCall(call, &selected));
  const char* algorithm = "?";
  Schedule schedule = scheduleForCall(call, selected, &algorithm);
  PreparedSchedule plan;
  prepareSchedule(std::move(schedule), sendAliasesRecv(call), comm->net.sliceBytes, &plan);
  plan.algorithm = algorithm;
  *out = comm->exec.planCache.insert(key, std::move(plan));
  WEFT_INFO(kLogTune | kLogColl, "%s: %zu x %s op %s root %d -> algorithm %s, %zu steps, slices of %zu bytes",
            collectiveName(call.kind.collective()), call.count, dataTypeName(call.datatype), redOpName(call.op),
            call.root, algorithm, (*out)->schedule.steps.size(), (*out)->sliceBytes);
  return ncclSuccess;
}

std::vector<int> peersOf(const Schedule& schedule) {
  std::vector<int> peers;
  for (const Step& s : schedule.steps)
    if (s.peer >= 0 && std::find(peers.begin(), peers.end(), s.peer) == peers.end()) peers.push_back(s.peer);
  std::sort(peers.begin(), peers.end());
  return peers;
}

// One unit of work of a communicator's queue: a collective, or all of a group's sends and
// receives on that communicator together.
struct WorkItem {
  const CollectiveCall* call;
  std::vector<const CollectiveCall*> pointToPoint;
};

// The work of one communicator, run one item after another in call order.
struct CommQueue {
  ncclComm* comm;
  std::deque<WorkItem> pending;
  std::unique_ptr<CollectiveRun> running;
  const CollectiveCall* handshakeFor = nullptr;  // the running run is this call's descriptor exchange
  bool confirmingDeviceMapping = false;          // ... its second one (direct_path.h)
  std::unique_ptr<PreparedSchedule> ownedPlan;   // a plan not in the cache (send/recv groups)
  // The running run is one of this send/recv group's (its exchanges, or its data).
  std::unique_ptr<DirectPointToPoint> pointToPoint;
};

char* scratchFor(ncclComm* comm, size_t bytes) {
  // Grown, never shrunk; resize() zero-fills, so the pages are faulted in here, once.
  if (comm->exec.scratch.size() < bytes) comm->exec.scratch.resize(bytes);
  return comm->exec.scratch.data();
}

// Writes this rank's collective record to WEFT_DUMP_FILE; *path says where.
ncclResult_t writeRecordDump(ncclComm* comm, std::string* path) {
  *path = recordDumpPath(comm->rank, comm->exec.traceId);
  if (path->empty()) return fail(ncclInvalidArgument, "WEFT_DUMP_FILE is empty");
  const std::string text =
      formatCollectiveRecords(comm->exec.records, comm->rank, comm->nranks, cycleStampToSteadyNs(cycleStamp()));
  WEFT_CHECK(replaceFile(*path, text, "WEFT_DUMP_FILE"));
  WEFT_WARN("rank %d: %zu recorded collectives written to %s", comm->rank, comm->exec.records.entries().size(),
            path->c_str());
  return ncclSuccess;
}

// WEFT_DUMP_ON_TIMEOUT: this rank's recorded collectives into WEFT_DUMP_FILE, named in the
// error the call returns, with what its peers on this host say (they dump theirs too).
// `peers`: askPeersAfterTimeout's lines, asked while this rank's own status still showed the
// call in flight.
ncclResult_t dumpRecordsAfterTimeout(ncclComm* comm, ncclResult_t result, const std::string& peers) {
  if (!settingBool(Setting::WeftDumpOnTimeout)) return result;
  const std::string message = lastErrorMessage();
  if (!comm->exec.records.enabled()) return fail(result, "%s%s", message.c_str(), peers.c_str());
  std::string path;
  if (writeRecordDump(comm, &path) != ncclSuccess)
    return fail(result, "%s (its collective record could not be written: %s)%s", message.c_str(),
                lastErrorMessage().c_str(), peers.c_str());
  return fail(result, "%s; this rank's last collectives are in %s%s", message.c_str(), path.c_str(), peers.c_str());
}

// Enters a started collective in the communicator's record and live status; returns its stamp.
uint64_t beginRecord(ncclComm* comm, uint64_t sequence, const CollectiveCall& call, const char* name,
                     const char* algorithm, int kind, uint64_t bytes, size_t steps,
                     const std::vector<PeerTraffic>& traffic) {
  const bool pointToPoint = call.kind.isPointToPoint();
  const bool reduces = !pointToPoint && collectiveReduces(call.kind.collective());
  const CollectiveRecord* record =
      comm->exec.records.begin(sequence, name, algorithm, kind, bytes, call.count, call.datatype,
                               reduces ? call.op : -1, pointToPoint ? -1 : call.root, steps, traffic);
  const uint64_t stamp = record ? record->startStamp : cycleStamp();
  comm->exec.progress.started(sequence, name, stamp);
  return stamp;
}

ncclResult_t startRun(CommQueue& queue, const CollectiveCall& call, const PreparedSchedule* plan, RunBuffers buffers,
                      const char* name, const RunCodec* codec = nullptr) {
  ncclComm* comm = call.comm;
  WEFT_CHECK(connectPeers(comm, peersOf(plan->schedule)));
  if (plan->schedule.scratchBytes) buffers.scratch = scratchFor(comm, plan->schedule.scratchBytes);
  RunReduction reduction;
  WEFT_CHECK(resolveReduction(call, &reduction));
  if (codec) reduction.codec = *codec;
  serveDumpRequest(comm);
  uint64_t sequence = comm->exec.collectiveSequence++;
  WEFT_TRACE(kLogColl, "%s #%llu count %zu datatype %d op %d root %d peer %d sendbuff %p recvbuff %p", name,
             (unsigned long long)sequence, call.count, call.datatype, call.op, call.root, call.peer, call.sendbuff,
             call.recvbuff);
  const bool pointToPoint = call.kind.isPointToPoint();
  // What the statistics count the call as: its collective at nccl-tests' size, a group's sends
  // and receives at the bytes sent, or nothing (the direct path's own descriptor exchange).
  int kind = pointToPoint ? kPointToPointKind : static_cast<int>(call.kind.collective());
  uint64_t bytes = 0;
  if (pointToPoint) {
    bytes = plan->bytesSentOutsideSteps;
    for (const PeerTraffic& t : plan->traffic) bytes += t.sentBytes;
  } else {
    bytes = call.count * dataTypeSize(call.datatype) *
            (sizeCountsEveryRank(call.kind.collective()) ? static_cast<uint64_t>(comm->nranks) : 1);
  }
  if (plan->bookkeeping) kind = -1;
  beginRecord(comm, sequence, call, name, plan->algorithm, kind, bytes, plan->schedule.steps.size(), plan->traffic);
  queue.running =
      std::make_unique<CollectiveRun>(plan, comm->net.connectionTable.data(), buffers, reduction, name, sequence);
  if (collectiveTraceEnabled()) {  // spans per step: the stamps reuse the communicator's buffer
    comm->exec.traceStepStamps.assign(2 * plan->schedule.steps.size(), 0);
    queue.running->timeSteps(comm->exec.traceStepStamps.data());
  }
  return ncclSuccess;
}

// Closes the record of `comm`'s collective `sequence`, and adds it (with its steps, when timed)
// to the WEFT_TRACE trace.
void endRecord(ncclComm* comm, uint64_t sequence, ncclResult_t result, const std::string& failure = "",
               const Schedule* steps = nullptr, const uint64_t* stepStamps = nullptr) {
  const CollectiveRecord* record = comm->exec.records.end(sequence, result, failure);
  comm->exec.progress.finished(sequence, record ? record->endStamp : cycleStamp(), result != ncclSuccess);
  if (!record) return;
  if (collectiveTraceEnabled()) {
    if (!comm->exec.traceClock.measured) {  // once, after the first call: rank 0 is surely serving by then
      comm->exec.traceClock.measured = true;
      comm->exec.traceClock.offsetNs = clockOffsetToRankZero(comm, 5, &comm->exec.traceClock.roundTripNs);
    }
    traceCollective(*record, comm->rank, comm->nranks, comm->exec.traceId, comm->exec.traceClock, steps, stepStamps);
  }
  if (comm->exec.metrics) comm->exec.metrics->add(*record);
}

void endRecord(ncclComm* comm, const CollectiveRun& run, ncclResult_t result, const std::string& failure = "") {
  endRecord(comm, run.sequence(), result, failure, run.stepStamps() ? &run.plan().schedule : nullptr, run.stepStamps());
}

// What a failed call returns: when it timed out, with what its peers on this host say (asked
// while this rank's status still shows the call in flight, so before `endRecords` closes the
// records) and where its record was dumped; the communicator keeps the error.
ncclResult_t failCall(ncclComm* blamed, ncclResult_t result, bool timedOut,
                      const std::function<void(const std::string& failure)>& endRecords) {
  const std::string failure = lastErrorMessage();
  const std::string peers =
      timedOut && settingBool(Setting::WeftDumpOnTimeout) ? askPeersAfterTimeout(blamed) : std::string();
  endRecords(failure);
  if (timedOut) result = dumpRecordsAfterTimeout(blamed, result, peers);
  setCommunicatorError(blamed, result);
  return result;
}

// A lone small all-reduce of ranks on one host: one exchange through the peers' mailboxes
// (one_shot.h), recorded like any collective.
ncclResult_t runOneShot(const CollectiveCall& call) {
  ncclComm* comm = call.comm;
  comm->state.activeCalls.fetch_add(1);
  const std::vector<PeerTraffic>* traffic = nullptr;
  ncclResult_t result;
  {
    CancelScope abortable(&comm->state.aborted);  // the first call's connection set-up waits on peers
    result = prepareOneShot(call, &traffic);
  }
  if (result != ncclSuccess) {
    setCommunicatorError(comm, result);
  } else {
    serveDumpRequest(comm);
    const uint64_t sequence = comm->exec.collectiveSequence++;
    const uint64_t bytes = call.count * dataTypeSize(call.datatype);
    beginRecord(comm, sequence, call, collectiveName(Collective::AllReduce), "one-shot",
                static_cast<int>(Collective::AllReduce), bytes, 1, *traffic);
    ncclComm* const comms[] = {comm};
    IdleWaiter waiter(comms);
    result = runOneShotAllReduce(call, sequence, &waiter);
    if (result == ncclSuccess)
      endRecord(comm, sequence, ncclSuccess);
    else
      result = failCall(comm, result, waiter.timedOut(),
                        [&](const std::string& failure) { endRecord(comm, sequence, result, failure); });
  }
  comm->state.activeCalls.fetch_sub(1);
  return result;
}

RunBuffers userBuffers(const CollectiveCall& call) {
  return RunBuffers{static_cast<const char*>(call.sendbuff), static_cast<char*>(call.recvbuff), nullptr};
}

// The next run of the send/recv group going direct (its exchanges, then its data); *started
// false once its data ran.
ncclResult_t startPointToPointRun(CommQueue& queue, bool* started) {
  const PreparedSchedule* plan = nullptr;
  RunBuffers buffers;
  const char* name = nullptr;
  WEFT_CHECK(queue.pointToPoint->nextRun(&plan, &buffers, &name));
  *started = plan != nullptr;
  return plan ? startRun(queue, queue.pointToPoint->firstCall(), plan, buffers, name) : ncclSuccess;
}

// Starts the queue's next item (or the direct-path handshake that decides how to run it).
ncclResult_t startNext(CommQueue& queue) {
  CancelScope abortable(&queue.comm->state.aborted);  // connection set-up and mapping wait on peers
  ScopedLogRank logAs(queue.comm->rank);              // its selection and plan lines name this rank
  queue.running.reset();
  if (queue.handshakeFor) {
    const CollectiveCall& call = *queue.handshakeFor;
    bool direct = false;
    RunBuffers buffers;
    const PreparedSchedule* plan = nullptr;
    if (queue.confirmingDeviceMapping) {
      WEFT_CHECK(concludeDeviceMapping(call, &direct, &buffers));
    } else {
      bool confirm = false;
      WEFT_CHECK(concludeDirectHandshake(call, &direct, &confirm, &plan, &buffers));
      if (confirm) {  // device buffers: the ranks say whether they could map their peers'
        queue.confirmingDeviceMapping = true;
        return startRun(queue, call, plan, buffers, "DirectMappingCheck");
      }
    }
    queue.handshakeFor = nullptr;
    queue.confirmingDeviceMapping = false;
    // A strided piece runs as the contiguous call where its blocks were copied into one place:
    // the own device buffers (direct) or its staging places (staged as it runs).
    const DeviceBuffers* device = call.deviceBuffers;
    const bool contiguous = device && (direct ? device->throughOwnBuffers : device->stagedAtRun);
    WEFT_CHECK(planFor(contiguous ? contiguousView(call) : call, direct, &plan));
    return startRun(queue, call, plan, buffers, collectiveName(call.kind.collective()));
  }
  if (queue.pointToPoint) {
    bool started = false;
    WEFT_CHECK(startPointToPointRun(queue, &started));
    if (started) return ncclSuccess;
    queue.pointToPoint.reset();  // its data ran
  }
  if (queue.pending.empty()) return ncclSuccess;
  WorkItem item = std::move(queue.pending.front());
  queue.pending.pop_front();
  if (!item.pointToPoint.empty() && (queue.pointToPoint = DirectPointToPoint::start(item.pointToPoint))) {
    bool started = false;  // its first exchange
    return startPointToPointRun(queue, &started);
  }
  if (!item.pointToPoint.empty()) {
    queue.ownedPlan = std::make_unique<PreparedSchedule>();
    WEFT_CHECK(preparePointToPoint(pointToPointParamsOf(item.pointToPoint), queue.comm->net.sliceBytes,
                                   queue.ownedPlan.get()));
    return startRun(queue, *item.pointToPoint.front(), queue.ownedPlan.get(), RunBuffers{}, "SendRecv");
  }
  const CollectiveCall& call = *item.call;
  CompressedRunSetup compressed;  // WEFT_COMPRESSION or weftAllReduceCompressed
  WEFT_CHECK(prepareCompressedAllReduce(call, &compressed));
  if (compressed.plan) {
    RunBuffers buffers = userBuffers(call);
    if (call.deviceBuffers) WEFT_CHECK(stageAtRun(call, &buffers));  // codecs run on the host
    return startRun(queue, call, compressed.plan, buffers, "AllReduceCompressed", &compressed.codec);
  }
  if (directPathEligible(call) && call.op < ncclNumOps) {
    const PreparedSchedule* plan = nullptr;
    RunBuffers buffers;
    WEFT_CHECK(beginDirectHandshake(call, &plan, &buffers));
    queue.handshakeFor = &call;
    return startRun(queue, call, plan, buffers, "DirectHandshake");
  }
  if (call.deviceBuffers)  // left unstaged for the direct path, which it must take (stream_dispatch.cc)
    return fail(ncclInternalError, "rank %d: a device call left unstaged reached the host path", queue.comm->rank);
  const PreparedSchedule* plan = nullptr;
  WEFT_CHECK(planFor(call, false, &plan));
  return startRun(queue, call, plan, userBuffers(call), collectiveName(call.kind.collective()));
}

// Groups the calls by communicator; each communicator's sends and receives become one item,
// placed where its first one was called.
std::vector<CommQueue> queuesFor(const std::vector<CollectiveCall>& calls) {
  std::vector<CommQueue> queues;
  for (const auto& call : calls) {
    auto it = std::find_if(queues.begin(), queues.end(), [&](const CommQueue& q) { return q.comm == call.comm; });
    if (it == queues.end()) {
      queues.push_back(CommQueue{call.comm, {}, nullptr, nullptr, false, nullptr, nullptr});
      it = queues.end() - 1;
    }
    if (call.kind.isPointToPoint()) {
      auto p2p = std::find_if(it->pending.begin(), it->pending.end(),
                              [](const WorkItem& w) { return !w.pointToPoint.empty(); });
      if (p2p == it->pending.end()) {
        it->pending.push_back(WorkItem{nullptr, {&call}});
      } else {
        p2p->pointToPoint.push_back(&call);
      }
    } else {
      it->pending.push_back(WorkItem{&call, {}});
    }
  }
  return queues;
}

}  // namespace

void serveDumpRequest(ncclComm* comm) {
  if (!comm->exec.dumpRequested.load(std::memory_order_relaxed)) return;
  comm->exec.dumpRequested.store(false, std::memory_order_relaxed);
  const std::string previousError = lastErrorMessage();
  std::string path;
  if (writeRecordDump(comm, &path) != ncclSuccess) WEFT_WARN("record dump asked for: %s", lastErrorMessage().c_str());
  restoreLastError(previousError);
}

ncclResult_t runCollectives(const std::vector<CollectiveCall>& calls) {
  if (calls.size() == 1 && takesOneShot(calls.front())) return runOneShot(calls.front());
  std::vector<CommQueue> queues = queuesFor(calls);
  std::vector<ncclComm*> comms;
  for (auto& q : queues) {
    comms.push_back(q.comm);
    q.comm->state.activeCalls.fetch_add(1);
  }
  bool timedOut = false;
  auto finish = [&](ncclResult_t result, ncclComm* culprit) {
    if (result != ncclSuccess)
      result = failCall(culprit ? culprit : comms.front(), result, timedOut, [&](const std::string& failure) {
        for (auto& q : queues)
          if (q.running) endRecord(q.comm, *q.running, result, failure);
      });
    // Runs let go of their connections (~CollectiveRun abandons in-place messages) while the
    // call still counts as active: ncclCommAbort waits for that before it frees them.
    for (auto& q : queues) q.running.reset();
    for (auto* c : comms) c->state.activeCalls.fetch_sub(1);
    return result;
  };

  for (auto& q : queues) {
    ncclResult_t result = startNext(q);
    if (result != ncclSuccess) return finish(result, q.comm);
  }
  IdleWaiter waiter(comms);
  bool waitPublished = false;  // a wait point was published since the last progress
  std::vector<CollectiveRun*> active;
  ncclComm* culprit = nullptr;
  // One pass over every running collective; starts each queue's next item as one finishes.
  auto progressAll = [&](bool* progressed) -> ncclResult_t {
    for (auto& q : queues) {
      while (q.running) {
        culprit = q.comm;
        WEFT_CHECK(q.running->progress(progressed));
        if (!q.running->done()) break;
        endRecord(q.comm, *q.running, ncclSuccess);
        WEFT_CHECK(startNext(q));
        *progressed = true;
      }
    }
    return ncclSuccess;
  };
  for (;;) {
    // Checked every pass, not only when idle: a large collective keeps progressing and would
    // otherwise notice an abort only when it finished.
    for (ncclComm* comm : comms)
      if (comm->state.aborted.load(std::memory_order_acquire))
        return finish(fail(ncclInvalidUsage,
                           "rank %d: the communicator was aborted (ncclCommAbort) while a "
                           "collective was running",
                           comm->rank),
                      comm);
    bool progressed = false;
    ncclResult_t result = progressAll(&progressed);
    if (result != ncclSuccess) return finish(result, culprit);
    active.clear();
    for (auto& q : queues)
      if (q.running) active.push_back(q.running.get());
    if (active.empty()) return finish(ncclSuccess, nullptr);
    if (progressed) {
      waiter.madeProgress();
      if (waitPublished) {
        for (auto& q : queues) q.comm->exec.progress.progressed();
        waitPublished = false;
      }
      continue;
    }
    if (waiter.pastSpin()) {  // stuck for now: say where, for `weft-info status`
      for (auto& q : queues) {
        serveDumpRequest(q.comm);
        if (!q.running) continue;
        WaitPoint wait = q.running->waitPoint();
        wait.sinceNs = waiter.idleSinceNs();
        q.comm->exec.progress.waiting(wait);
      }
      waitPublished = true;
    }
    result = waiter.idle(active, progressAll);
    timedOut = waiter.timedOut();
    if (result != ncclSuccess) return finish(result, culprit ? culprit : comms.front());
  }
}

}  // namespace weft
