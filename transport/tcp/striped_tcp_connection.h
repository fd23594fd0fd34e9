// A TCP connection of several sockets to one peer (NCCL_NSOCKS_PERTHREAD x
// NCCL_SOCKET_NTHREADS of them), so that one socket's window does not cap the pair: every
// message is numbered and cut into parts of at least kMinStripeBytes, part j of message s going
// on socket (s + j) mod N; each part carries its message's number, size and its own offset, and
// the receiver puts the parts back together in a ring indexed by the number, delivering whole
// messages in order. Without helper threads the caller's thread moves every socket and sleeps
// on one epoll set of them; with NCCL_SOCKET_NTHREADS helpers, helper t moves sockets t, t + T,
// ... (their copies on other cores), and the caller sleeps on a doorbell they ring.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "transport/transport.h"

namespace weft {

constexpr size_t kMinStripeBytes = 64 << 10;  // a message is cut into parts no smaller

// The connection over already joined sockets `fds` (owned from now on; at least two), stream i
// of the pair on fds[i] at both ends, staged through a ring of `ring.slots` slots per direction;
// `helperThreads` above 1 starts that many helpers (at most one per socket), else none.
ncclResult_t makeStripedTcpConnection(const std::vector<int>& fds, int peerRank, const RingGeometry& ring,
                                      int helperThreads, std::unique_ptr<Connection>* out);

}  // namespace weft
