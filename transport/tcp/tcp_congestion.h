// The congestion control of weft's TCP data sockets (WEFT_TCP_CONGESTION). A connection inside
// one host has no queue to pace for and no loss to react to, yet a pacing congestion control
// (BBR, where the system picked it) still paces it: weft's 2-rank all-reduce over TCP loopback
// ran about 30% faster at 256 KiB-16 MiB with reno (docs/performance.md). So by default ("auto")
// such connections get reno, which every kernel has built in and lets any user choose, and
// connections between hosts keep the system's choice. "system" changes nothing; any other value
// is a congestion control for every data socket, and a kernel that refuses it fails the set-up.
#pragma once

#include "nccl.h"

namespace weft {

// Applies the setting to `fd`, connected to rank `peerRank`; logs a change at INFO.
ncclResult_t applyCongestionControl(int fd, int peerRank);

}  // namespace weft
