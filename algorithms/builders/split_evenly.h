// Cutting `count` elements into nearly equal parts: the chunks of a ring, the halves of a
// tree, the spans of channels. Every builder that divides a buffer uses this one rule, so that
// schedules of different algorithms agree on where a chunk starts.
#pragma once

#include <algorithm>
#include <cstddef>

namespace weft {

// The element range [begin, end) of chunk `chunk` when `count` elements are split into
// `parts` nearly equal chunks (the first count % parts chunks get one more element).
struct ElementSpan {
  size_t begin;
  size_t end;
};

inline ElementSpan splitEvenly(size_t count, int parts, int chunk) {
  const size_t base = count / parts;
  const size_t extra = count % parts;
  const size_t c = static_cast<size_t>(chunk);
  const size_t begin = c * base + std::min(c, extra);
  return {begin, begin + base + (c < extra ? 1 : 0)};
}

}  // namespace weft
