// The contents of ncclUniqueId: where the bootstrap root listens, a 128-bit secret every rank
// must prove it holds, and whether rank 0 hosts the root (NCCL_COMM_ID and launch-environment
// ids) or the process that called ncclGetUniqueId already does.
#pragma once

#include <cstdint>

#include "common/socket.h"
#include "nccl.h"

namespace weft {

constexpr uint64_t kUniqueIdMagic = 0x7765667449443031ull;  // "weftID01"

struct BootstrapSecret {
  uint8_t bytes[16];
};

struct UniqueIdContents {
  SocketAddress root;
  BootstrapSecret secret{};
  bool rootAtRankZero = false;
};

void encodeUniqueId(const UniqueIdContents& contents, ncclUniqueId* id);
// Fails with ncclInvalidArgument when `id` was not made by weft (or is corrupt).
ncclResult_t decodeUniqueId(const ncclUniqueId& id, UniqueIdContents* contents);

// 16 bytes from the kernel's random source.
ncclResult_t randomSecret(BootstrapSecret* secret);
// A secret from text: 32 hex digits are taken as is; anything else is hashed (weaker: only as
// secret as the text).
BootstrapSecret secretFromText(const char* text);
// For a secret computed from public data (`derivedFrom`: the rendezvous address, a job id),
// which anyone who can reach the root can compute too: warns once that the bootstrap is not
// authenticated, or fails with ncclInvalidUsage under WEFT_AUTH=required.
ncclResult_t allowPublicSecret(const char* derivedFrom);

}  // namespace weft
