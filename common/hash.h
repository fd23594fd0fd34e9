// FNV-1a: a small, stable hash for identities that every rank must compute alike (host ids,
// secrets derived from text). Not for anything an attacker may choose to collide.
#pragma once

#include <cstdint>
#include <string_view>

namespace weft {

inline uint64_t fnv1a(std::string_view text, uint64_t seed = 0) {
  uint64_t hash = 1469598103934665603ull ^ seed;
  for (char c : text) hash = (hash ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return hash;
}

}  // namespace weft
