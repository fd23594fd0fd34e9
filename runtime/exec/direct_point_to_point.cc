#include "runtime/exec/direct_point_to_point.h"

#include <algorithm>

#include "common/dtype.h"
#include "common/log.h"
#include "common/status.h"
#include "runtime/comm/communicator.h"
#include "runtime/device/staged_at_run.h"
#include "runtime/exec/call_schedule.h"
#include "runtime/exec/direct_path.h"

namespace weft {

// What one side says about one call with its partner. In the verdicts' exchange only `mapped`
// of a send is new.
struct DirectPointToPoint::Record {
  uint64_t bytes = 0;    // of the call: both sides check they agree before anything is written
  uint32_t isSend = 0;   // which side this is: a pair that grouped its calls differently disagrees
  uint32_t capable = 0;  // this side's buffer is device memory left in place (a receive's exported)
  uint32_t mapped = 0;   // a send: the sender mapped the receiver's buffer and copies into it
  DeviceBufferExport recv;
};

struct DirectPointToPoint::CallState {
  size_t bytes = 0;
  bool eligible = false;  // pointToPointDirectEligible, asked by start()
  bool capable = false;
  bool peerCapable = false;
  bool mapped = false;  // a send: this rank mapped the peer's buffer; a receive: the peer did
  bool direct = false;
  bool hasRecord = false;
  size_t outgoing = 0, incoming = 0;  // its records in records_
  // A receive into memory that cannot be exported (cudaMalloc's): the sender writes into the
  // communicator's own device buffers at this offset, copied out after the data run.
  bool throughOwnBuffers = false;
  size_t ownOffset = 0;
};

namespace {

size_t bytesOf(const CollectiveCall& call) { return call.count * dataTypeSize(call.datatype); }

const char* bufferOf(const CollectiveCall& call) {
  return static_cast<const char*>(call.kind.isSend() ? call.sendbuff : call.recvbuff);
}

}  // namespace

bool pointToPointDirectEligible(const CollectiveCall& call) {
  const ncclComm* comm = call.comm;
  // The memory last: it asks the device.
  return call.kind.isPointToPoint() && comm->agreed.direct && comm->agreed.directSendRecv && comm->nranks >= 2 &&
         call.peer != comm->rank && bytesOf(call) >= std::max<size_t>(comm->agreed.directMinBytes, 1) &&
         ranksWithADevice(comm) == comm->nranks && allRanksOnOneHost(comm) && sameHostPeersShareMemory(comm) &&
         memoryKind(bufferOf(call)) != MemoryKind::Host;
}

DirectPointToPoint::DirectPointToPoint(const std::vector<const CollectiveCall*>& calls)
    : calls_(calls), state_(calls.size()) {}

DirectPointToPoint::~DirectPointToPoint() {
  // A group that failed after its copies were queued: they must not read the caller's send
  // buffers after the batch released its streams.
  if (waitForCopies() != ncclSuccess)
    WEFT_WARN("rank %d: waiting for direct sends' copies: %s", calls_.front()->comm->rank, lastErrorMessage().c_str());
}

ncclResult_t DirectPointToPoint::waitForCopies() {
  if (!copiesQueued_) return ncclSuccess;
  copiesQueued_ = false;
  const DeviceWork* work = nullptr;
  WEFT_CHECK(deviceWorkOf(calls_.front()->comm, &work));
  return work->api->synchronizeStream(work->stream);
}

std::unique_ptr<DirectPointToPoint> DirectPointToPoint::start(const std::vector<const CollectiveCall*>& calls) {
  std::vector<int> partners;
  std::vector<bool> eligible(calls.size());  // asked once a call: it may ask the device
  for (size_t i = 0; i < calls.size(); ++i)
    if ((eligible[i] = pointToPointDirectEligible(*calls[i]))) partners.push_back(calls[i]->peer);
  // Sends to self that do not pair up with receives from self (in number and, in order, in
  // size): the plain schedule says so, before any message (buildPointToPoint).
  std::vector<size_t> selfSends, selfRecvs;
  for (const CollectiveCall* call : calls)
    if (call->peer == call->comm->rank) (call->kind.isSend() ? selfSends : selfRecvs).push_back(bytesOf(*call));
  if (partners.empty() || selfSends != selfRecvs) return nullptr;
  std::sort(partners.begin(), partners.end());
  partners.erase(std::unique(partners.begin(), partners.end()), partners.end());
  std::unique_ptr<DirectPointToPoint> group(new DirectPointToPoint(calls));
  group->partners_ = std::move(partners);
  for (size_t i = 0; i < calls.size(); ++i) group->state_[i].eligible = eligible[i];
  return group;
}

void DirectPointToPoint::prepareRecords() {
  ncclComm* comm = calls_.front()->comm;
  size_t ownBytes = 0;  // of the receives through the own device buffers
  for (size_t i = 0; i < calls_.size(); ++i) {
    const CollectiveCall& call = *calls_[i];
    CallState& s = state_[i];
    s.bytes = bytesOf(call);
    const DeviceBuffers* device = call.deviceBuffers;
    // (A call left in place came through the stream path: its communicator has a work stream.)
    s.capable = s.eligible && device;
    // A direct transfer writes the receiver's buffer before the data run: a rank's buffer that
    // it also sends from (or receives into) in the same group is left to the ordered schedule.
    for (size_t j = 0; s.capable && j < calls_.size(); ++j)
      if (j != i && calls_[j]->kind.isSend() != call.kind.isSend() &&
          rangesOverlap(bufferOf(call), s.bytes, bufferOf(*calls_[j]), bytesOf(*calls_[j])))
        s.capable = false;
    if (s.capable && !call.kind.isSend() && device->recv.kind == DeviceBufferExport::None) {
      // Placed side by side in the own buffers, as many as fit.
      const size_t at = (ownBytes + 63) & ~size_t{63};
      s.throughOwnBuffers = at + s.bytes <= comm->agreed.ownDeviceBufferBytes;
      s.capable = s.throughOwnBuffers;
      s.ownOffset = at;
      if (s.throughOwnBuffers) ownBytes = at + s.bytes;
    }
  }
  if (ownBytes && !ownDeviceBuffersFor(comm, ownBytes))
    for (CallState& s : state_)
      if (s.throughOwnBuffers) s.capable = s.throughOwnBuffers = false;
  // Per partner: its records out (sends to it, then receives from it, each in call order) and
  // in (its sends to this rank, i.e. these receives, then its receives, i.e. these sends).
  size_t total = 0;
  for (int p : partners_) {
    firstRecord_.push_back(total);
    size_t sends = 0, recvs = 0;
    // Calls of no bytes have no record, as they have no step in the data run.
    for (const CollectiveCall* call : calls_)
      if (call->peer == p && bytesOf(*call)) ++(call->kind.isSend() ? sends : recvs);
    size_t sent = 0, received = 0;
    for (size_t i = 0; i < calls_.size(); ++i) {
      if (calls_[i]->peer != p || state_[i].bytes == 0) continue;
      CallState& s = state_[i];
      s.hasRecord = true;
      if (calls_[i]->kind.isSend()) {
        s.outgoing = total + sent;
        s.incoming = total + recvs + sent++;
      } else {
        s.outgoing = total + sends + received;
        s.incoming = total + received++;
      }
    }
    recordCount_.push_back(sends + recvs);
    total += sends + recvs;
  }
  records_.assign(2 * total, Record{});
  for (CallState& s : state_) s.incoming += total;
  for (size_t i = 0; i < calls_.size(); ++i) {
    if (!state_[i].hasRecord) continue;
    Record& out = records_[state_[i].outgoing];
    out.bytes = state_[i].bytes;
    out.isSend = calls_[i]->kind.isSend() ? 1 : 0;
    out.capable = state_[i].capable ? 1 : 0;
    if (!state_[i].capable || calls_[i]->kind.isSend()) continue;
    if (state_[i].throughOwnBuffers) {
      out.recv = comm->direct.ownDevice.exported;
      out.recv.offset += state_[i].ownOffset;
    } else {
      out.recv = calls_[i]->deviceBuffers->recv;
    }
  }
}

void DirectPointToPoint::exchangePlan(bool verdicts, PreparedSchedule* plan) const {
  const size_t total = records_.size() / 2;
  auto wanted = [&](size_t partner) {
    if (!verdicts) return true;
    for (size_t i = 0; i < calls_.size(); ++i)  // a pair where both sides can go direct
      if (calls_[i]->peer == partners_[partner] && state_[i].capable && state_[i].peerCapable) return true;
    return false;
  };
  Schedule exchange;
  const size_t r = sizeof(Record);
  for (size_t k = 0; k < partners_.size(); ++k)
    if (wanted(k))
      exchange.steps.push_back(
          {StepKind::Send, partners_[k], {BufferKind::Send, firstRecord_[k] * r, recordCount_[k] * r}, {}, {}});
  for (size_t k = 0; k < partners_.size(); ++k)
    if (wanted(k))
      exchange.steps.push_back({StepKind::Recv,
                                partners_[k],
                                {},
                                {BufferKind::Recv, (total + firstRecord_[k]) * r, recordCount_[k] * r},
                                {}});
  prepareSchedule(std::move(exchange), false, calls_.front()->comm->net.sliceBytes, plan);
  plan->algorithm = verdicts ? "direct send/recv verdicts" : "direct send/recv records";
  plan->bookkeeping = true;
}

ncclResult_t DirectPointToPoint::takeRecords() {
  ncclComm* comm = calls_.front()->comm;
  // Both sides of a pair see the same disagreement and fail alike, before anything is written:
  // calls grouped differently (the same number of records, sends and receives split otherwise),
  // or sizes that differ (NCCL leaves it undefined; the staged path reports it as data arrives).
  for (size_t i = 0; i < calls_.size(); ++i) {
    const CallState& s = state_[i];
    if (!s.hasRecord) continue;
    const CollectiveCall& call = *calls_[i];
    const Record& in = records_[s.incoming];
    if ((in.isSend != 0) == call.kind.isSend())
      return fail(ncclInvalidUsage,
                  "send/recv group: ranks %d and %d group their sends and receives to each other differently "
                  "(undefined in NCCL; the direct path needs them grouped alike: WEFT_DIRECT_SEND_RECV=0 turns it off)",
                  comm->rank, call.peer);
    if (in.bytes == s.bytes) continue;
    const uint64_t theirs = in.bytes;
    return fail(ncclInvalidUsage, "send/recv group: rank %d %s %zu bytes %s rank %d, which %s %llu", comm->rank,
                call.kind.isSend() ? "sends" : "receives", s.bytes, call.kind.isSend() ? "to" : "from", call.peer,
                call.kind.isSend() ? "receives" : "sends", static_cast<unsigned long long>(theirs));
  }
  for (size_t i = 0; i < calls_.size(); ++i) {
    CallState& s = state_[i];
    if (!s.hasRecord) continue;
    const Record& in = records_[s.incoming];
    s.peerCapable = in.capable != 0;
    const CollectiveCall& call = *calls_[i];
    if (!call.kind.isSend() || !s.capable || !s.peerCapable) continue;
    // The receiver's buffer mapped here (once per allocation and communicator), and the data
    // copied into it now: the verdicts' exchange runs meanwhile. Where either fails, the
    // verdict says so and the transfer is staged: the peer is never left waiting.
    char* peerRecv = nullptr;
    const DeviceWork* work = nullptr;
    if (in.recv.kind == DeviceBufferExport::None || mapPeerDeviceBuffer(comm, in.recv, &peerRecv) != ncclSuccess ||
        deviceWorkOf(comm, &work) != ncclSuccess ||
        work->api->copyAsync(peerRecv, call.sendbuff, s.bytes, work->stream) != ncclSuccess) {
      warnUnmappablePeers(comm);
      continue;
    }
    copiesQueued_ = true;
    s.mapped = true;
    records_[s.outgoing].mapped = 1;
  }
  return ncclSuccess;
}

ncclResult_t DirectPointToPoint::prepareData() {
  ncclComm* comm = calls_.front()->comm;
  WEFT_CHECK(waitForCopies());  // the tokens go out once the data is in the receivers' buffers
  tokens_.assign(calls_.size(), 1);
  // The plain schedule's operations, with a token for each direct transfer and the staging place
  // for each call left in place for nothing.
  PointToPointParams params = pointToPointParamsOf(calls_);
  size_t direct = 0, directBytes = 0;
  for (size_t i = 0; i < calls_.size(); ++i) {
    const CollectiveCall& call = *calls_[i];
    CallState& s = state_[i];
    PointToPointOp& op = params.ops[i];
    if (s.hasRecord && !op.send && s.capable && s.peerCapable) s.mapped = records_[s.incoming].mapped != 0;
    s.direct = s.capable && s.peerCapable && s.mapped;
    if (s.direct) {
      ++direct;
      if (op.send) directBytes += s.bytes;
      op.offset = reinterpret_cast<uintptr_t>(&tokens_[i]);
      op.bytes = sizeof(uint64_t);
    } else if (call.deviceBuffers) {
      RunBuffers staged;
      WEFT_CHECK(stageAtRun(call, &staged));
      op.offset = reinterpret_cast<uintptr_t>(op.send ? staged.send : staged.recv);
    }
  }
  WEFT_CHECK(preparePointToPoint(params, comm->net.sliceBytes, &dataPlan_));
  if (direct) dataPlan_.algorithm = "point to point, direct";
  dataPlan_.bytesSentOutsideSteps = directBytes;
  if (direct && !comm->direct.announcedDevicePointToPoint) {  // what gpu-check.sh looks for
    WEFT_INFO(kLogColl, "rank %d: device sends and receives go direct: the receivers' buffers mapped", comm->rank);
    comm->direct.announcedDevicePointToPoint = true;
  }
  return ncclSuccess;
}

ncclResult_t DirectPointToPoint::copyOutOfOwnBuffers() {
  ncclComm* comm = calls_.front()->comm;
  const DeviceWork* work = nullptr;
  bool copied = false;
  for (size_t i = 0; i < calls_.size(); ++i) {
    if (!state_[i].direct || !state_[i].throughOwnBuffers) continue;
    if (!work) WEFT_CHECK(deviceWorkOf(comm, &work));
    WEFT_CHECK(work->api->copyAsync(calls_[i]->recvbuff, comm->direct.ownDevice.base + state_[i].ownOffset,
                                    state_[i].bytes, work->stream));
    copied = true;
  }
  stage_ = Stage::Finished;
  return copied ? work->api->synchronizeStream(work->stream) : ncclSuccess;
}

ncclResult_t DirectPointToPoint::nextRun(const PreparedSchedule** plan, RunBuffers* buffers, const char** name) {
  *plan = nullptr;
  *buffers = RunBuffers{};
  *name = "SendRecvHandshake";
  switch (stage_) {
    case Stage::Records:
      prepareRecords();
      exchangePlan(false, &recordsPlan_);
      *plan = &recordsPlan_;
      buffers->send = buffers->recv = reinterpret_cast<char*>(records_.data());
      stage_ = Stage::Verdicts;
      return ncclSuccess;
    case Stage::Verdicts:
      WEFT_CHECK(takeRecords());
      exchangePlan(true, &verdictsPlan_);
      stage_ = Stage::Data;
      if (!verdictsPlan_.schedule.steps.empty()) {
        *plan = &verdictsPlan_;
        buffers->send = buffers->recv = reinterpret_cast<char*>(records_.data());
        return ncclSuccess;
      }
      [[fallthrough]];
    case Stage::Data:
      WEFT_CHECK(prepareData());
      *plan = &dataPlan_;
      *name = "SendRecv";
      stage_ = Stage::Done;
      return ncclSuccess;
    case Stage::Done: return copyOutOfOwnBuffers();
    case Stage::Finished: return ncclSuccess;
  }
  return ncclSuccess;
}

}  // namespace weft
