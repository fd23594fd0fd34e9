// A copy whose destination is written with non-temporal stores: the lines go to memory
// without first being read (no read-for-ownership) and without evicting the cache. For the last
// write of a large collective into the user's buffer, which nothing reads back soon, this saves
// a third of the memory traffic of an ordinary copy.
#pragma once

#include <cstddef>

namespace weft {

void streamingCopy(void* dst, const void* src, size_t bytes);

// The same stores at any size and without the closing fence, for a caller that streams many
// small pieces (a tile at a time) and fences once, with streamingFence, before anyone is told.
void streamingCopyUnfenced(void* dst, const void* src, size_t bytes);
void streamingFence();

// Copies below this size are better served by memcpy (the data stays in cache for the caller).
constexpr size_t kStreamingCopyMinBytes = 64 << 10;

}  // namespace weft
