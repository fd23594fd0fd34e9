#include "common/reduce_to_two.h"

#include <algorithm>
#include <cstring>

#include "common/dtype.h"
#include "common/streaming_copy.h"

namespace weft {

namespace {

// Destinations whose alignment differs within a line: a small tile, reduced, then copied to each
// destination with streaming stores. Small, so that loads of the sources and streaming stores
// to the destinations interleave closely. A whole number of elements of every type.
constexpr size_t kTileBytes = 1 << 10;

void reduceToTwoByTiles(char* dst, char* dst2, const char* a, const char* b, size_t count, ncclDataType_t type,
                        ReduceOp op) {
  const size_t size = dataTypeSize(type);
  alignas(64) char tile[kTileBytes];
  const size_t perTile = kTileBytes / size;
  for (size_t first = 0; first < count; first += perTile) {
    const size_t n = std::min(perTile, count - first);
    const size_t at = first * size;
    // Both sources are read before either destination is written: in place, a destination
    // is one of them.
    reduceBuffers(tile, a + at, b + at, n, type, op);
    streamingCopyUnfenced(dst + at, tile, n * size);
    streamingCopyUnfenced(dst2 + at, tile, n * size);
  }
}

// Ordinary stores: calls that do not stream, and the few elements before the destinations'
// first whole line and after their last.
void reduceToTwoPlain(char* dst, char* dst2, const char* a, const char* b, size_t count, ncclDataType_t type,
                      ReduceOp op) {
  reduceBuffers(dst, a, b, count, type, op);
  memcpy(dst2, dst, count * dataTypeSize(type));
}

}  // namespace

void reduceToTwo(void* dst, void* dst2, const void* a, const void* b, size_t count, ncclDataType_t type, ReduceOp op,
                 bool streaming) {
  if (count == 0) return;  // the pointers of an empty range may be null
  auto* to = static_cast<char*>(dst);
  auto* to2 = static_cast<char*>(dst2);
  auto* x = static_cast<const char*>(a);
  auto* y = static_cast<const char*>(b);
  if (!streaming) {
    reduceToTwoPlain(to, to2, x, y, count, type, op);
    return;
  }
  const size_t size = dataTypeSize(type);
  const uintptr_t d = reinterpret_cast<uintptr_t>(to);
  const size_t headBytes = (kReduceLineBytes - d % kReduceLineBytes) % kReduceLineBytes;
  if ((d - reinterpret_cast<uintptr_t>(to2)) % kReduceLineBytes != 0 || headBytes % size != 0) {
    reduceToTwoByTiles(to, to2, x, y, count, type, op);
    streamingFence();
    return;
  }
  // Both destinations start a line after the same head: whole lines from there, each reduced
  // and stored to both before the next is read (reduceLinesToTwoStreaming).
  const size_t head = std::min(count, headBytes / size);
  reduceToTwoPlain(to, to2, x, y, head, type, op);
  size_t at = head * size;
  const size_t lines = (count * size - at) / kReduceLineBytes;
  reduceLinesToTwoStreaming(to + at, to2 + at, x + at, y + at, lines, type, op);
  at += lines * kReduceLineBytes;
  reduceToTwoPlain(to + at, to2 + at, x + at, y + at, count - at / size, type, op);
  streamingFence();
}

}  // namespace weft
