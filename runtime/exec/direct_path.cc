#include "runtime/exec/direct_path.h"

#include <algorithm>

#include "algorithms/algorithm.h"
#include "common/dtype.h"
#include "common/log.h"
#include "common/status.h"
#include "runtime/comm/communicator.h"
#include "runtime/device/staged_at_run.h"
#include "runtime/exec/call_schedule.h"

namespace weft {

namespace {

// The rooted collectives (broadcast, reduce, gather, scatter), which go direct only where every
// rank has a device: trainers call them on device memory, where staging crosses PCIe twice. On
// host memory the handshake is a barrier that the selected algorithm does not have (a root, or
// a peer, leaves once its data is in the shared-memory slots): with it, broadcasts and reduces
// on malloc'd buffers took 20-76% longer at 1-4 MiB (docs/performance.md). The all-reduce,
// all-gather, reduce-scatter and all-to-all wait for every rank anyway.
bool rooted(Collective collective) {
  return collective == Collective::Broadcast || collective == Collective::Reduce || collective == Collective::Gather ||
         collective == Collective::Scatter;
}

// The call's larger buffer, as large as on the rank whose is largest (a gather's or scatter's
// root), its blocks back to back: the same on every rank, whether a strided slice or piece runs
// strided there or staged without its stride.
size_t largestBufferOfCall(const CollectiveCall& call) {
  const size_t block = call.count * dataTypeSize(call.datatype);
  return sizeCountsEveryRank(call.kind.collective()) ? block * static_cast<size_t>(call.comm->nranks) : block;
}

}  // namespace

BufferSpans peerVisibleSpans(const CollectiveCall& call) {
  BufferSpans spans = bufferSpans(call);
  switch (call.kind.collective()) {
    case Collective::AllGather: spans.send = 0; break;      // peers write block r of the output
    case Collective::ReduceScatter: spans.recv = 0; break;  // peers read their blocks of the input
    case Collective::Broadcast: spans.recv = 0; break;      // peers read the root's input
    case Collective::AllToAll: spans.send = 0; break;       // peers write their blocks of the output
    case Collective::Gather: spans.send = 0; break;         // peers write their blocks of the root's output
    case Collective::Scatter: spans.recv = 0; break;        // peers read their blocks of the root's input
    default: break;                                         // all-reduce, reduce: both the call has
  }
  return spans;
}

bool needsApartBuffers(const CollectiveCall& call) {
  return !call.kind.isPointToPoint() && call.kind.collective() == Collective::AllToAll && buffersOverlap(call);
}

bool directPathEligible(const CollectiveCall& call) {
  ncclComm* comm = call.comm;
  // Every call asks: the cheap tests first, so that small calls leave at once.
  if (!comm->agreed.direct || comm->nranks < 2 || call.kind.isPointToPoint()) return false;
  // A piece of a call cut to fit the own device buffers may be smaller: the whole call was not.
  if (!call.ownBufferPiece && largestBufferOfCall(call) < comm->agreed.directMinBytes) return false;
  const Collective collective = call.kind.collective();
  if (!algorithmApplies(collective, Algorithm::Direct)) return false;
  if (rooted(collective) && ranksWithADevice(comm) < comm->nranks) return false;
  return allRanksOnOneHost(comm) && sameHostPeersShareMemory(comm);
}

namespace {

// The descriptor exchange's plan and buffers (the descriptors are its scratch).
void exchangeOfDescriptors(ncclComm* comm, const PreparedSchedule** plan, RunBuffers* buffers) {
  *plan = &comm->direct.handshakePlan;
  *buffers = RunBuffers{};
  buffers->scratch = reinterpret_cast<char*>(comm->direct.descriptors.data());
  buffers->send = buffers->scratch;
  buffers->recv = buffers->scratch;
}

// Most peer allocations a communicator keeps mapped; beyond, its calls are staged (a mapping
// is released only with the communicator: see releaseDeviceDirectState).
constexpr size_t kMaxDeviceImports = 256;

}  // namespace

ncclResult_t mapPeerDeviceBuffer(ncclComm* comm, const DeviceBufferExport& buffer, char** out) {
  *out = nullptr;
  if (buffer.kind == DeviceBufferExport::None) return ncclSuccess;
  const auto key = std::make_pair(buffer.ticket.secret[0], buffer.ticket.secret[1]);
  auto it = comm->direct.deviceImports.find(key);
  if (it == comm->direct.deviceImports.end()) {
    if (comm->direct.deviceImports.size() >= kMaxDeviceImports)
      return fail(ncclInvalidUsage, "%zu peer allocations are mapped already (the most a communicator keeps)",
                  kMaxDeviceImports);
    char* address = nullptr;
    WEFT_CHECK(deviceApi()->importDeviceBuffer(buffer, communicatorTimeout(comm), &address));
    it = comm->direct.deviceImports.emplace(key, DirectPathState::DeviceImport{buffer, address - buffer.offset}).first;
  }
  *out = it->second.base + buffer.offset;
  return ncclSuccess;
}

void warnUnmappablePeers(ncclComm* comm) {
  if (comm->direct.warnedUnmappable) return;
  WEFT_WARN(
      "rank %d: cannot map the peers' device buffers (%s); device calls are staged through host memory "
      "instead",
      comm->rank, lastErrorMessage().c_str());
  comm->direct.warnedUnmappable = true;
}

namespace {

// Maps every peer's device buffers; false (and why, logged once per communicator) when one
// cannot be, or this rank has no stream for its kernels.
bool mapPeersDeviceBuffers(ncclComm* comm) {
  const DeviceWork* work = nullptr;
  bool mapped = deviceWorkOf(comm, &work) == ncclSuccess;
  for (int p = 0; mapped && p < comm->nranks; ++p) {
    if (p == comm->rank) continue;
    const DirectDescriptor& d = comm->direct.descriptors[p];
    mapped = mapPeerDeviceBuffer(comm, d.deviceSend, &comm->direct.peerSendBuffers[p]) == ncclSuccess &&
             mapPeerDeviceBuffer(comm, d.deviceRecv, &comm->direct.peerRecvBuffers[p]) == ncclSuccess;
  }
  if (!mapped) warnUnmappablePeers(comm);
  return mapped;
}

// Where `bytes` at `pointer` lie in shared host memory; true with nothing to find for a buffer
// the call ignores on this rank (bytes 0).
bool locateShared(const void* pointer, size_t bytes, SharedBufferLocation* out) {
  *out = SharedBufferLocation{};
  return bytes == 0 || findSharedBuffer(pointer, bytes, out);
}

// The address here of a peer's shared host buffer; null for a buffer the call ignores on that
// peer (nothing located).
ncclResult_t mapPeerSharedBuffer(ncclComm* comm, const SharedBufferLocation& location, char** out) {
  *out = nullptr;
  return location.bytes == 0 ? ncclSuccess : comm->direct.peerBuffers.map(location, out);
}

// Copies the result of the last call through own buffers into the caller's buffer.
ncclResult_t copyOutOfOwnBuffers(ncclComm* comm) {
  const CollectiveCall* call = comm->direct.resultInOwnBuffers;
  if (!call) return ncclSuccess;
  comm->direct.resultInOwnBuffers = nullptr;
  if (bufferSpans(*call).recv == 0) return ncclSuccess;  // nothing written on this rank (a reduce off the root)
  const DeviceWork* work = nullptr;
  WEFT_CHECK(deviceWorkOf(comm, &work));
  WEFT_CHECK(copyResultFromContiguous(*work, *call, comm->direct.resultArea));
  return work->api->synchronizeStream(work->stream);
}

// Own device buffers with areas of at least `bytes`, exported: grown by doubling, but not beyond
// WEFT_OWN_DEVICE_BUFFER_BYTES (the old ones retired, not freed: see DirectPathState).
ncclResult_t ensureOwnDeviceBuffers(ncclComm* comm, size_t bytes) {
  auto& own = comm->direct.ownDevice;
  if (own.base && own.areaBytes >= bytes) return ncclSuccess;
  size_t area = std::max<size_t>(own.areaBytes, size_t{1} << 20);
  while (area < bytes) area *= 2;
  area = std::min(area, std::max(bytes, comm->agreed.ownDeviceBufferBytes));
  DeviceApi* device = deviceApi();
  void* base = nullptr;
  WEFT_CHECK(device->allocateDevice(2 * area, &base));
  DeviceBufferExport exported;
  if (!device->exportDeviceBuffer(base, 2 * area, &exported)) {
    // Freed with the communicator, not now: freeing may wait for the device, whose streams
    // wait on this thread.
    comm->direct.retiredOwnDevice.push_back(static_cast<char*>(base));
    return fail(ncclInvalidUsage, "rank %d: this device's memory cannot be exported (own buffers of %zu bytes)",
                comm->rank, 2 * area);
  }
  if (own.base) comm->direct.retiredOwnDevice.push_back(own.base);
  own = {static_cast<char*>(base), area, exported};
  return ncclSuccess;
}

// Says why the own device buffers cannot be had, and stops trying (staged from then on).
void giveUpOwnBuffers(ncclComm* comm) {
  WEFT_WARN("rank %d: no device buffers of its own for the direct path (%s); such calls are staged", comm->rank,
            lastErrorMessage().c_str());
  comm->direct.ownBuffersUnusable = true;
}

// For a call on memory this rank cannot export: its input copied into the own send area, and
// the two areas' exports for the descriptor; false where there are no own buffers (then for
// good: no allocation per call, no free under waiting streams).
bool stageIntoOwnBuffers(ncclComm* comm, const CollectiveCall& call, DirectDescriptor* mine) {
  if (comm->direct.ownBuffersUnusable) return false;
  const DeviceWork* work = nullptr;
  ncclResult_t r = deviceWorkOf(comm, &work);
  const BufferSpans spans = bufferSpans(contiguousView(call));  // a strided piece's blocks back to back
  if (r == ncclSuccess) r = ensureOwnDeviceBuffers(comm, std::max(spans.send, spans.recv));
  if (r == ncclSuccess && spans.send) r = copyInputToContiguous(*work, call, comm->direct.ownDevice.base);
  if (r == ncclSuccess) r = work->api->synchronizeStream(work->stream);
  if (r != ncclSuccess) {
    giveUpOwnBuffers(comm);
    return false;
  }
  const BufferSpans visible = peerVisibleSpans(call);
  if (visible.send) mine->deviceSend = comm->direct.ownDevice.exported;
  if (visible.recv) {
    mine->deviceRecv = comm->direct.ownDevice.exported;
    mine->deviceRecv.offset += comm->direct.ownDevice.areaBytes;
  }
  return true;
}

// For a strided piece (of a collective with a block per rank): the direct schedule names block
// `rank` of a peer's strided buffer, the only one of it this rank touches, at rank x block, as in
// a contiguous buffer. Where the peer's blocks lie further apart (its own buffers, not the own
// device buffers), the mapping is moved so that the schedule's offset lands on that block.
void reachPeersStridedBlocks(const CollectiveCall& call) {
  ncclComm* comm = call.comm;
  if (!call.blockStride) return;
  const size_t block = call.count * dataTypeSize(call.datatype);
  // Peers' blocks this rank writes (all-gather, all-to-all, gather) or reads (reduce-scatter,
  // scatter).
  std::vector<char*>& strided =
      recvHoldsRankBlocks(call.kind.collective()) ? comm->direct.peerRecvBuffers : comm->direct.peerSendBuffers;
  for (int p = 0; p < comm->nranks; ++p) {
    const uint64_t stride = comm->direct.descriptors[p].blockStrideBytes;
    if (p != comm->rank && stride && strided[p]) strided[p] += static_cast<size_t>(comm->rank) * (stride - block);
  }
}

}  // namespace

bool ownDeviceBuffersFor(ncclComm* comm, size_t bytes) {
  if (comm->direct.ownBuffersUnusable) return false;
  const ncclResult_t copied = copyOutOfOwnBuffers(comm);
  if (copied != ncclSuccess) {  // that call's result is not in place: the communicator's error
    setCommunicatorError(comm, copied);
    return false;
  }
  if (ensureOwnDeviceBuffers(comm, bytes) == ncclSuccess) return true;
  giveUpOwnBuffers(comm);
  return false;
}

ncclResult_t beginDirectHandshake(const CollectiveCall& call, const PreparedSchedule** plan, RunBuffers* buffers) {
  ncclComm* comm = call.comm;
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
    comm->direct.handshakePlan.bookkeeping = true;
    std::vector<int> everyone;
    for (int p = 0; p < comm->nranks; ++p) everyone.push_back(p);
    WEFT_CHECK(connectPeers(comm, everyone));
  }
  DirectDescriptor& mine = comm->direct.descriptors[comm->rank];
  mine = DirectDescriptor{};
  if (const DeviceBuffers* device = call.deviceBuffers) {
    // An earlier call's result leaves the own receive area before this call may reuse it. A
    // failure is the communicator's error; the exchange still goes on (as not capable), so that
    // the peers are not left waiting.
    const ncclResult_t copied = copyOutOfOwnBuffers(comm);
    if (copied != ncclSuccess) setCommunicatorError(comm, copied);
    mine.onDevice = 1;
    if (copied != ncclSuccess) {
      mine.capable = 0;
    } else if (device->throughOwnBuffers) {  // before the exchange: peers read the input once it is done
      mine.capable = stageIntoOwnBuffers(comm, call, &mine) ? 1 : 0;
    } else {  // exported when the call was enqueued
      mine.capable = 1;
      mine.deviceSend = device->send;
      mine.deviceRecv = device->recv;
      mine.blockStrideBytes = call.blockStride ? blockStrideBytes(call) : 0;
    }
  } else {
    const BufferSpans visible = peerVisibleSpans(call);
    mine.capable = !needsApartBuffers(call) && locateShared(call.sendbuff, visible.send, &mine.send) &&
                   locateShared(call.recvbuff, visible.recv, &mine.recv);
    mine.blockStrideBytes = call.blockStride ? blockStrideBytes(call) : 0;
  }
  exchangeOfDescriptors(comm, plan, buffers);
  return ncclSuccess;
}

ncclResult_t concludeDirectHandshake(const CollectiveCall& call, bool* useDirect, bool* confirm,
                                     const PreparedSchedule** plan, RunBuffers* buffers) {
  ncclComm* comm = call.comm;
  bool everyCapable = true, everyOnDevice = true, anyOnDevice = false;
  for (const auto& d : comm->direct.descriptors) {
    everyCapable &= d.capable != 0;
    everyOnDevice &= d.onDevice != 0;
    anyOnDevice |= d.onDevice != 0;
  }
  *confirm = false;
  *buffers = RunBuffers{static_cast<const char*>(call.sendbuff), static_cast<char*>(call.recvbuff), nullptr};
  // Peers' buffers freed since the last call (the pointers below are replaced anyway).
  comm->direct.peerBuffers.releaseFreed();
  // Kernels read device memory, the host reads shared host memory: one kind on every rank.
  *useDirect = everyCapable && !anyOnDevice;
  if (everyCapable && everyOnDevice) {
    comm->direct.descriptors[comm->rank].mappedPeers = mapPeersDeviceBuffers(comm) ? 1 : 0;
    *confirm = true;
    exchangeOfDescriptors(comm, plan, buffers);
    return ncclSuccess;
  }
  if (!*useDirect) return call.deviceBuffers ? stageAtRun(call, buffers) : ncclSuccess;
  for (int p = 0; p < comm->nranks; ++p) {
    if (p == comm->rank) continue;
    const DirectDescriptor& d = comm->direct.descriptors[p];
    WEFT_CHECK(mapPeerSharedBuffer(comm, d.send, &comm->direct.peerSendBuffers[p]));
    WEFT_CHECK(mapPeerSharedBuffer(comm, d.recv, &comm->direct.peerRecvBuffers[p]));
  }
  reachPeersStridedBlocks(call);
  buffers->peerSend = comm->direct.peerSendBuffers.data();
  buffers->peerRecv = comm->direct.peerRecvBuffers.data();
  return ncclSuccess;
}

ncclResult_t concludeDeviceMapping(const CollectiveCall& call, bool* useDirect, RunBuffers* buffers) {
  ncclComm* comm = call.comm;
  *useDirect = true;
  for (const auto& d : comm->direct.descriptors) *useDirect &= d.mappedPeers != 0;
  *buffers = RunBuffers{static_cast<const char*>(call.sendbuff), static_cast<char*>(call.recvbuff), nullptr};
  if (!*useDirect) return stageAtRun(call, buffers);
  if (!comm->direct.announcedDevicePath) {  // what gpu-check.sh looks for: which path ran
    WEFT_INFO(kLogColl, "rank %d: device %s goes direct: peers' device buffers mapped, kernels on the device",
              comm->rank, collectiveName(call.kind.collective()));
    comm->direct.announcedDevicePath = true;
  }
  if (call.deviceBuffers->throughOwnBuffers) {  // read and written there, copied out after the run
    buffers->send = comm->direct.ownDevice.base;
    buffers->recv = comm->direct.ownDevice.base + comm->direct.ownDevice.areaBytes;
    comm->direct.resultInOwnBuffers = &call;
    comm->direct.resultArea = buffers->recv;
  }
  reachPeersStridedBlocks(call);
  buffers->peerSend = comm->direct.peerSendBuffers.data();
  buffers->peerRecv = comm->direct.peerRecvBuffers.data();
  return deviceWorkOf(comm, &buffers->device);
}

ncclResult_t finishOwnDeviceBuffers(ncclComm* comm, bool ran) {
  if (!ran) comm->direct.resultInOwnBuffers = nullptr;  // nothing worth copying
  return copyOutOfOwnBuffers(comm);
}

void releaseDeviceDirectState(ncclComm* comm) {
  auto& state = comm->direct;
  if (state.deviceImports.empty() && !state.ownDevice.base && state.retiredOwnDevice.empty()) return;
  // No kernel of this rank may still use them (a run that failed between a launch and its wait).
  const DeviceWork* work = nullptr;
  if (deviceWorkOf(comm, &work) == ncclSuccess) work->api->synchronizeStream(work->stream);
  for (const auto& [key, import] : state.deviceImports)
    deviceApi()->releaseDeviceBuffer(import.buffer, import.base + import.buffer.offset);
  state.deviceImports.clear();
  if (state.ownDevice.base) state.retiredOwnDevice.push_back(state.ownDevice.base);
  for (char* base : state.retiredOwnDevice)
    if (deviceApi()->freeDevice(base) != ncclSuccess)
      WEFT_WARN("rank %d: freeing its own device buffers: %s", comm->rank, lastErrorMessage().c_str());
  state.retiredOwnDevice.clear();
  state.ownDevice = {};
}

}  // namespace weft
