#include "common/reduce_to_two.h"

#include <algorithm>
#include <cstring>

#include "common/dtype.h"
#include "common/streaming_copy.h"

namespace weft {

namespace {

// Small, so that loads of the sources and streaming stores to the destinations interleave
// closely: on this project's VM (2 threads, 128 MiB, 4 KiB pages) a 1 KiB tile runs at 93% of
// a kernel that stores straight from registers, 16 KiB tiles at 65%. A whole number of
// elements of every type.
constexpr size_t kTileBytes = 1 << 10;

}  // namespace

void reduceToTwo(void* dst, void* dst2, const void* a, const void* b, size_t count, ncclDataType_t type, ReduceOp op,
                 bool streaming) {
  if (count == 0) return;  // the pointers of an empty range may be null
  const size_t size = dataTypeSize(type);
  if (!streaming) {
    reduceBuffers(dst, a, b, count, type, op);
    memcpy(dst2, dst, count * size);
    return;
  }
  alignas(64) char tile[kTileBytes];
  const size_t perTile = kTileBytes / size;
  for (size_t first = 0; first < count; first += perTile) {
    const size_t n = std::min(perTile, count - first);
    const size_t at = first * size;
    // Both sources are read before either destination is written: in place, a destination
    // is one of them.
    reduceBuffers(tile, static_cast<const char*>(a) + at, static_cast<const char*>(b) + at, n, type, op);
    streamingCopyUnfenced(static_cast<char*>(dst) + at, tile, n * size);
    streamingCopyUnfenced(static_cast<char*>(dst2) + at, tile, n * size);
  }
  streamingFence();
}

}  // namespace weft
