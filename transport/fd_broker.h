// Hands memory file descriptors (shm segments, ncclMemAlloc buffers, later CUDA IPC handles) to other processes of
// the same user on this host over a Unix socket (SCM_RIGHTS), instead of letting them reopen
// /proc/<pid>/fd/<fd>. That path needed ptrace rights over the owner and one PID namespace,
// and failed once the owner had closed the fd. A descriptor handed over keeps the memory alive
// in the receiver: a mapping, once made, outlives its creator.
//
// The owner offers a descriptor and gets a ticket (the broker's socket name and a 128-bit
// secret) to publish to its peers; a peer presents the ticket and receives a duplicate of the
// descriptor. The broker admits only processes of its own user (SO_PEERCRED) holding a
// ticket's secret. It runs on a thread of its own while at least one offer is open, and stops
// when the last is withdrawn, so a process without offers has no broker thread.
#pragma once

#include <cstdint>

#include "nccl.h"

namespace weft {

struct FdTicket {
  char socketName[32] = {};  // abstract Unix socket name (without the leading NUL); empty: none
  uint64_t secret[2] = {};

  bool valid() const { return socketName[0] != '\0'; }
};

// Offers `fd` (which the caller keeps open until it withdraws the offer).
ncclResult_t offerFileDescriptor(int fd, FdTicket* ticket);
// Withdraws an offer: later requests for the ticket are refused.
void withdrawFileDescriptor(const FdTicket& ticket);
// A new descriptor for the memory behind `ticket` (close-on-exec; the caller closes it).
// ncclRemoteError when the owner is gone or refuses, within `timeoutSeconds`. With
// `ownerPidfd`, also a pidfd of the owner process (-1 where its kernel has none; the caller
// closes it): see peer_process.h.
ncclResult_t fetchFileDescriptor(const FdTicket& ticket, double timeoutSeconds, int* fd, int* ownerPidfd = nullptr);

}  // namespace weft
