// ncclMemAlloc's host memory: every allocation is its own memfd mapping, faulted in once at
// allocation time, so that ranks on the same host can map each other's buffers (the fd
// broker hands the descriptor over, transport/fd_broker.h) and collectives can read peers'
// data directly instead of through a bounce buffer. A process-wide registry answers "is this pointer such a buffer, and
// where".
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "nccl.h"
#include "transport/fd_broker.h"

namespace weft {

// Where a shared buffer lives, as another process on the host needs to know it.
struct SharedBufferLocation {
  FdTicket ticket;      // the allocation's descriptor; its secret names the allocation uniquely
  uint64_t bytes = 0;   // size of the whole allocation
  uint64_t offset = 0;  // of the queried pointer within it
};

// A shared allocation of at least `bytes` (> 0) into *ptr (non-null); the caller checks both.
ncclResult_t sharedAlloc(void** ptr, size_t bytes);
ncclResult_t sharedFree(void* ptr);
// True (and `out` filled) when [ptr, ptr + bytes) lies inside one shared allocation.
bool findSharedBuffer(const void* ptr, size_t bytes, SharedBufferLocation* out);

// Maps other processes' shared allocations, once each, until their owner frees them (and this
// side calls releaseFreed) or the mapper goes.
class PeerBufferMapper {
 public:
  ~PeerBufferMapper();
  // The address of `location` (its offset included) in this process, or nullptr on failure.
  ncclResult_t map(const SharedBufferLocation& location, char** out);
  // Unmaps the buffers whose owners have called ncclMemFree since; returns how many. Only
  // between calls: a pointer map() returned before is invalid afterwards if its buffer was freed.
  size_t releaseFreed();
  // Buffers mapped now (for tests).
  size_t size();

 private:
  struct Mapping {
    void* base;
    size_t bytes;  // the owner's part; its release page follows
  };
  std::mutex mutex_;
  std::map<std::pair<uint64_t, uint64_t>, Mapping> mappings_;  // by ticket secret
};

}  // namespace weft
