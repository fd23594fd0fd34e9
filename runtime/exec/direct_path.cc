#include "runtime/exec/direct_path.h"

#include "common/dtype.h"
#include "common/log.h"
#include "common/status.h"
#include "runtime/comm/communicator.h"

namespace weft {

bool directPathEligible(const CollectiveCall& call) {
  ncclComm* comm = call.comm;
  return comm->agreed.direct && call.kind == Collective::AllReduce && comm->nranks > 1 &&
         static_cast<int>(comm->layout.localRanks.size()) == comm->nranks && sameHostPeersShareMemory(comm) &&
         call.count * dataTypeSize(call.datatype) >= comm->agreed.directMinBytes;
}

ncclResult_t beginDirectHandshake(const CollectiveCall& call, const PreparedSchedule** plan, RunBuffers* buffers) {
  ncclComm* comm = call.comm;
  const size_t bytes = call.count * dataTypeSize(call.datatype);
  const size_t d = sizeof(DirectDescriptor);
  if (comm->direct.descriptors.empty()) {
    comm->direct.descriptors.resize(comm->nranks);
    comm->direct.peerSendBuffers.assign(comm->nranks, nullptr);
    comm->direct.peerRecvBuffers.assign(comm->nranks, nullptr);
    // Send this rank's descriptor to every peer, then take theirs.
    Schedule exchange;
    for (int p = 0; p < comm->nranks; ++p)
      if (p != comm->rank)
        exchange.steps.push_back({StepKind::Send, p, {BufferKind::Scratch, comm->rank * d, d}, {}, {}});
    for (int p = 0; p < comm->nranks; ++p)
      if (p != comm->rank) exchange.steps.push_back({StepKind::Recv, p, {}, {BufferKind::Scratch, p * d, d}, {}});
    prepareSchedule(std::move(exchange), false, comm->net.sliceBytes, &comm->direct.handshakePlan);
    comm->direct.handshakePlan.algorithm = "direct descriptor exchange";
    std::vector<int> everyone;
    for (int p = 0; p < comm->nranks; ++p) everyone.push_back(p);
    WEFT_CHECK(connectPeers(comm, everyone));
  }
  DirectDescriptor& mine = comm->direct.descriptors[comm->rank];
  mine = DirectDescriptor{};
  mine.capable =
      findSharedBuffer(call.sendbuff, bytes, &mine.send) && findSharedBuffer(call.recvbuff, bytes, &mine.recv);
  *plan = &comm->direct.handshakePlan;
  *buffers = RunBuffers{};
  buffers->scratch = reinterpret_cast<char*>(comm->direct.descriptors.data());
  buffers->send = buffers->scratch;
  buffers->recv = buffers->scratch;
  return ncclSuccess;
}

ncclResult_t concludeDirectHandshake(const CollectiveCall& call, bool* useDirect, RunBuffers* buffers) {
  ncclComm* comm = call.comm;
  *useDirect = true;
  for (const auto& d : comm->direct.descriptors) *useDirect &= d.capable != 0;
  *buffers = RunBuffers{static_cast<const char*>(call.sendbuff), static_cast<char*>(call.recvbuff), nullptr};
  // Peers' buffers freed since the last call (the pointers below are replaced anyway).
  comm->direct.peerBuffers.releaseFreed();
  if (!*useDirect) return ncclSuccess;
  for (int p = 0; p < comm->nranks; ++p) {
    if (p == comm->rank) continue;
    const DirectDescriptor& d = comm->direct.descriptors[p];
    WEFT_CHECK(comm->direct.peerBuffers.map(d.send, &comm->direct.peerSendBuffers[p]));
    WEFT_CHECK(comm->direct.peerBuffers.map(d.recv, &comm->direct.peerRecvBuffers[p]));
  }
  buffers->peerSend = comm->direct.peerSendBuffers.data();
  buffers->peerRecv = comm->direct.peerRecvBuffers.data();
  return ncclSuccess;
}

}  // namespace weft
