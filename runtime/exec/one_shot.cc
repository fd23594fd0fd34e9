#include "runtime/exec/one_shot.h"

#include <string>

#include "common/dtype.h"
#include "common/reduce.h"
#include "common/status.h"
#include "runtime/comm/communicator.h"
#include "runtime/comm/reduction_ops.h"
#include "runtime/exec/compressed_allreduce_run.h"
#include "runtime/exec/idle_waiter.h"

namespace weft {

namespace {

bool algorithmForced(const ncclComm* comm) {
  return (comm->agreed.weftAlgo && !comm->agreed.weftAlgo->empty()) ||
         (comm->agreed.ncclAlgo && !comm->agreed.ncclAlgo->empty());
}

// One awaited message, as the idle waiter's callbacks see it (one pointer: std::function keeps
// it without allocating).
struct AwaitedMessage {
  ncclComm* comm;
  Connection* peer;
  int peerRank;
  uint64_t sequence;        // the mailbox call number
  uint64_t recordSequence;  // the collective's number, for the status and errors
  const void* data = nullptr;
  size_t bytes = 0;
};

// Waits for peer's message number `sequence`, publishing the wait for `weft-info status` once it
// outlasts the spin.
ncclResult_t awaitMessage(AwaitedMessage* m, IdleWaiter* waiter) {
  bool published = false;
  auto look = [m](bool* arrived) -> ncclResult_t {
    WEFT_CHECK(m->peer->mailboxPeek(m->sequence, &m->data, &m->bytes));
    *arrived = m->data != nullptr;
    return ncclSuccess;
  };
  auto describe = [m]() {
    char text[160];
    snprintf(text, sizeof text, "allreduce #%llu (one-shot: rank %d's input, mailbox message %llu)",
             static_cast<unsigned long long>(m->recordSequence), m->peerRank,
             static_cast<unsigned long long>(m->sequence));
    return std::string(text);
  };
  for (;;) {
    bool arrived = false;
    WEFT_CHECK(look(&arrived));
    if (arrived) break;
    if (waiter->pastSpin()) serveDumpRequest(m->comm);
    if (waiter->pastSpin() && !published) {
      WaitPoint wait;
      wait.sequence = m->recordSequence;
      wait.stepKind = "mailbox";
      wait.peer = m->peerRank;
      wait.slices = 1;
      wait.sinceNs = waiter->idleSinceNs();
      m->comm->exec.progress.waiting(wait);
      published = true;
    }
    WEFT_CHECK(waiter->idleOn(m->peer, describe, look));
  }
  waiter->madeProgress();
  if (published) m->comm->exec.progress.progressed();
  return ncclSuccess;
}

}  // namespace

bool oneShotEligible(const CollectiveCall& call) {
  ncclComm* comm = call.comm;
  const size_t bytes = call.count * dataTypeSize(call.datatype);
  return call.kind == Collective::AllReduce && comm->nranks > 1 && bytes > 0 && bytes <= comm->agreed.oneShotMaxBytes &&
         call.op < ncclNumOps && allRanksOnOneHost(comm) && sameHostPeersShareMemory(comm) && !algorithmForced(comm) &&
         !compressedAllReduceWanted(call);
}

bool takesOneShot(const CollectiveCall& call) { return call.callsInGroup <= 1 && oneShotEligible(call); }

ncclResult_t prepareOneShot(const CollectiveCall& call, const std::vector<PeerTraffic>** traffic) {
  ncclComm* comm = call.comm;
  OneShotState& state = comm->exec.oneShot;
  if (state.peers.empty()) {
    std::vector<int> everyone;
    for (int p = 0; p < comm->nranks; ++p) everyone.push_back(p);
    WEFT_CHECK(connectPeers(comm, everyone));
    state.peers.assign(comm->nranks, nullptr);
    for (int p = 0; p < comm->nranks; ++p) {
      if (p == comm->rank) continue;
      Connection* c = comm->net.connectionTable[p];
      // Both ranks of a pair see the same transport; a pair without a mailbox would leave the
      // other ranks waiting in theirs, so it is an error here rather than a path of its own.
      if (c->mailboxBytes() < comm->agreed.oneShotMaxBytes)
        return fail(ncclInvalidUsage,
                    "rank %d reaches rank %d on this host through %s, which has no mailbox for the one-shot "
                    "all-reduce (WEFT_ONE_SHOT_MAX_BYTES=0 turns it off)",
                    comm->rank, p, c->transportName());
      state.peers[p] = c;
    }
    if (comm->nranks > 2) state.accumulator.resize(comm->agreed.oneShotMaxBytes);
  }
  const size_t bytes = call.count * dataTypeSize(call.datatype);
  if (state.traffic.empty() || state.trafficBytes != bytes) {
    state.traffic.clear();
    for (int p = 0; p < comm->nranks; ++p)
      if (p != comm->rank) state.traffic.push_back(PeerTraffic{p, bytes, bytes});
    state.trafficBytes = bytes;
  }
  *traffic = &state.traffic;
  return ncclSuccess;
}

ncclResult_t runOneShotAllReduce(const CollectiveCall& call, uint64_t recordSequence, IdleWaiter* waiter) {
  ncclComm* comm = call.comm;
  OneShotState& state = comm->exec.oneShot;
  const size_t bytes = call.count * dataTypeSize(call.datatype);
  const uint64_t sequence = ++state.sequence;
  for (int p = 0; p < comm->nranks; ++p)
    if (p != comm->rank) WEFT_CHECK(state.peers[p]->mailboxPost(sequence, call.sendbuff, bytes));
  RunReduction reduction;
  WEFT_CHECK(resolveReduction(call, &reduction));

  // Inputs in rank order on every rank: the same operations in the same order, the same bits.
  // The last step writes the result; call.recvbuff may be call.sendbuff, which is read at the
  // latest in that step.
  const void* partial = nullptr;
  for (int r = 0; r < comm->nranks; ++r) {
    const void* input = call.sendbuff;
    if (r != comm->rank) {
      AwaitedMessage m{comm, state.peers[r], r, sequence, recordSequence};
      WEFT_CHECK(awaitMessage(&m, waiter));
      if (m.bytes != bytes)
        return fail(ncclInvalidUsage,
                    "allreduce #%llu: rank %d contributed %zu bytes and rank %d %zu: the ranks called ncclAllReduce "
                    "with different counts or datatypes",
                    static_cast<unsigned long long>(recordSequence), r, m.bytes, comm->rank, bytes);
      input = m.data;
    }
    if (r == 0) {
      partial = input;
      continue;
    }
    void* out = r == comm->nranks - 1 ? call.recvbuff : state.accumulator.data();
    reduceBuffers(out, partial, input, call.count, reduction.type, reduction.op);
    partial = out;
  }
  if (call.op == ncclAvg)
    divideBuffer(call.recvbuff, call.recvbuff, call.count, reduction.type, static_cast<uint64_t>(comm->nranks));
  return ncclSuccess;
}

}  // namespace weft
