// Choosing the direct path (algorithms/builders/direct_collectives.h: all-reduce, all-gather,
// reduce-scatter, broadcast, reduce, all-to-all, gather, scatter): it needs every rank on one
// host and every rank's buffers that peers read or write in memory the others can map: all in
// shared host memory (ncclMemAlloc's without a GPU, weftMemAllocHost), or all in device memory
// the device seam can export (CUDA IPC; then the local steps are kernels). Each rank knows only
// its own buffers, so before a large call the ranks exchange descriptors (a tiny schedule of its
// own), and every rank reaches the same verdict from the same table. A device call that cannot
// go direct is staged through host memory by the progress thread instead.
#pragma once

#include "runtime/exec/collective.h"
#include "runtime/exec/executor.h"
#include "transport/shm/shared_memory_pool.h"

namespace weft {

// A communicator's own device buffers (two areas: send and receive) are at most
// WEFT_OWN_DEVICE_BUFFER_BYTES each (comm->agreed.ownDeviceBufferBytes). Larger collectives
// are cut into pieces that fit (runtime/exec/staging_slices.h); a group's receives into memory
// that cannot be exported go through them as far as they fit, and the rest are staged.

struct DirectDescriptor {
  uint32_t capable = 0;
  uint32_t onDevice = 0;     // the buffers are device memory: `deviceSend` and `deviceRecv` apply
  uint32_t mappedPeers = 0;  // device memory, second exchange: this rank mapped every peer's buffers
  // A strided piece (CollectiveCall::blockStride) read or written in this rank's own buffers:
  // bytes from one block of its strided buffer to the next (an all-gather's output, a
  // reduce-scatter's input, both of an all-to-all's). 0: contiguous, as in the own device buffers. A peer touches only
  // block `peer` of it, so it moves its mapping of that buffer by peer x (stride - block).
  uint64_t blockStrideBytes = 0;
  SharedBufferLocation send;  // host memory
  SharedBufferLocation recv;
  DeviceBufferExport deviceSend;  // device memory
  DeviceBufferExport deviceRecv;
};

// Depends only on what every rank agrees on (the call's shape, the layout, the environment).
bool directPathEligible(const CollectiveCall& call);
// The bytes of this rank's buffers that its peers read or write in the call's direct schedule
// (its ranges with an owner): those must be shared or exported, and are mapped by the peers.
// The rest of bufferSpans(call) only this rank touches (an all-gather's input, a reduce-scatter's
// output, a broadcast's outputs): any memory of the right kind will do.
BufferSpans peerVisibleSpans(const CollectiveCall& call);
// An all-to-all whose buffers overlap on this rank: its direct schedule cannot run on them (a
// peer could overwrite a block before this rank sent it). On shared host memory such a rank
// says it is not capable, so every rank takes the selected algorithm; on device memory the call
// goes through the communicator's own buffers, which never overlap.
bool needsApartBuffers(const CollectiveCall& call);
// The descriptor-exchange run for `call`: fills this rank's descriptor and returns the plan and
// buffers to run.
ncclResult_t beginDirectHandshake(const CollectiveCall& call, const PreparedSchedule** plan, RunBuffers* buffers);
// After the exchange: *useDirect when every rank can be read directly; then maps the peers'
// buffers and returns them in `buffers`. *confirm instead, where every rank's buffers are device
// memory: this rank has tried to map its peers' (a sandbox may refuse CUDA IPC, a device may not
// reach another), and the ranks exchange the descriptors once more to agree (`plan`, `buffers`:
// that exchange); concludeDeviceMapping then decides.
ncclResult_t concludeDirectHandshake(const CollectiveCall& call, bool* useDirect, bool* confirm,
                                     const PreparedSchedule** plan, RunBuffers* buffers);
// After the second exchange: *useDirect when every rank mapped every peer's device buffers (then
// `buffers` has them, and the device work stream); otherwise the call is staged through host
// memory (runtime/device/staged_at_run.h) and `buffers` points there.
ncclResult_t concludeDeviceMapping(const CollectiveCall& call, bool* useDirect, RunBuffers* buffers);
// The address here of a peer's device buffer, mapping its allocation once per communicator;
// null for a buffer the call ignores on that peer (nothing exported).
ncclResult_t mapPeerDeviceBuffer(ncclComm* comm, const DeviceBufferExport& buffer, char** out);
// Says once per communicator that a peer's device buffers could not be mapped (and why).
void warnUnmappablePeers(ncclComm* comm);
// The communicator's own device buffers (DirectPathState::ownDevice), each area at least
// `bytes`, free to use: an earlier call's result copied out of them first. False where they
// cannot be had (then for good, and said once).
bool ownDeviceBuffersFor(ncclComm* comm, size_t bytes);
// After a batch ran (`ran`: without error): copies the result of its last call through the
// communicator's own device buffers into the caller's (earlier calls' are copied before the
// next one reuses the buffers).
ncclResult_t finishOwnDeviceBuffers(ncclComm* comm, bool ran);
// Releases the peers' device allocations the communicator mapped, and frees its own device
// buffers: when it is destroyed, once no stream waits on it and its kernels are done. Not per
// call: unmapping and freeing may synchronize the device, which would wait for the caller's
// streams that wait on the progress thread. A mapping holds the peer's memory (cuMem), so the
// peer may free its buffer meanwhile.
void releaseDeviceDirectState(ncclComm* comm);

}  // namespace weft
