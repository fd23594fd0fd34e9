// Proving that a connection's other end holds a shared key without sending the key:
// HMAC-SHA-256 (OpenSSL's libcrypto, no home-made cryptography) over fresh random nonces from
// both ends, so that a recorded exchange cannot be replayed on a new connection. weft keys the
// bootstrap with the job's secret (the unique id's) and the connections between ranks with a
// key derived from it for one communicator (runtime/comm/bootstrap.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>

#include "nccl.h"

namespace weft {

struct MacKey {
  uint8_t bytes[32];
};
struct Mac {
  uint8_t bytes[32];
};
struct Nonce {
  uint8_t bytes[16];
};

// One piece of what a MAC covers.
struct MacPart {
  const void* data;
  size_t bytes;
};

// `bytes` from the kernel's random source.
ncclResult_t randomBytes(void* out, size_t bytes);
ncclResult_t randomNonce(Nonce* nonce);

// HMAC-SHA-256 with `key` (of `keyBytes`) over `label` followed by every part in order. The
// label says what the MAC is for, so that one kind of message is never accepted as another.
Mac computeMac(const void* key, size_t keyBytes, std::string_view label, std::initializer_list<MacPart> parts);
inline Mac computeMac(const MacKey& key, std::string_view label, std::initializer_list<MacPart> parts) {
  return computeMac(key.bytes, sizeof(key.bytes), label, parts);
}
// In constant time: how many bytes matched must not leak.
bool macsEqual(const Mac& a, const Mac& b);
// A key for one purpose (`label`, `context`) from a parent key.
MacKey deriveKey(const void* parent, size_t parentBytes, std::string_view label, MacPart context);

}  // namespace weft
