// A copy whose destination is written with non-temporal stores: the lines go to memory
// without first being read (no read-for-ownership) and without evicting the cache. For the last
// write of a large collective into the user's buffer, which nothing reads back soon, this saves
// a third of the memory traffic of an ordinary copy.
#pragma once

#include <cstddef>
#include <cstdint>

namespace weft {

// Non-temporal stores into a page whose address translation is not cached appear to wait for the
// page walk, and nothing starts that walk early for them (the hardware prefetchers follow loads).
// With both cores streaming at once on this project's VM (nested paging), a streaming copy into
// a 128 MiB buffer ran 17-60% faster, and out-of-place reductions to two destinations 15-25%
// faster, when the loop touched the page two ahead with one prefetch as it entered each page;
// one core alone gained 0-5% (docs/performance.md, "Streaming stores that wait for page walks").
// Loops that stream into large buffers call this with each address they are about to store to,
// advancing by `stepBytes` (at most a page); it acts once a page. A prefetch never faults, so
// running ahead past the buffer's end is harmless.
constexpr size_t kStorePageBytes = 4096;
constexpr size_t kStorePagesAhead = 2;
inline void prefetchStorePageAhead(const char* dst, size_t stepBytes) {
  if ((reinterpret_cast<uintptr_t>(dst) & (kStorePageBytes - 1)) < stepBytes)
    __builtin_prefetch(dst + kStorePagesAhead * kStorePageBytes, 0, 3);
}

void streamingCopy(void* dst, const void* src, size_t bytes);

// The same stores at any size and without the closing fence, for a caller that streams many
// small pieces (a tile at a time) and fences once, with streamingFence, before anyone is told.
void streamingCopyUnfenced(void* dst, const void* src, size_t bytes);
void streamingFence();

// Copies below this size are better served by memcpy (the data stays in cache for the caller).
constexpr size_t kStreamingCopyMinBytes = 64 << 10;

}  // namespace weft
