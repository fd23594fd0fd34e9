// The shared-memory segment's ring prefault: it must fault in every page a ring spans (a ring
// may start inside a page) and change no byte, since a lazily connected peer may already have
// put a message there.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/status.h"
#include "transport/shm/shm_segment.h"

namespace weft {
namespace {

// Pages of [begin, begin + bytes) resident in this mapping, by mincore (independent of weft).
size_t residentPages(const char* begin, size_t bytes, size_t* pages) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t first = reinterpret_cast<uintptr_t>(begin) & ~(page - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(begin) + bytes;
  *pages = (end - first + page - 1) / page;
  std::vector<unsigned char> resident(*pages);
  if (mincore(reinterpret_cast<void*>(first), end - first, resident.data()) != 0) return 0;
  size_t count = 0;
  for (unsigned char r : resident) count += r & 1;
  return count;
}

TEST(ShmSegment, PrefaultTouchesEveryPageOfTheRingAndChangesNoByte) {
  // 3 rings of 7 slots of 4160 bytes: ring 1 starts inside a page and ends inside another.
  const ShmLayout layout{4160, 7, 3};
  ShmSegment segment;
  ASSERT_EQ(segment.create(layout), ncclSuccess) << lastErrorMessage();
  char* ring = reinterpret_cast<char*>(segment.ring(1));
  const size_t bytes = layout.ringBytes();
  ASSERT_NE(reinterpret_cast<uintptr_t>(ring) % 4096, 0u) << "the test wants a ring that starts inside a page";

  // What a peer wrote before this rank's prefault: a message in slot 0; the rest of the ring is
  // the fresh file's zeros and the ring header that create() wrote. Reading the ring here would
  // fault it in, so the expected bytes are built, not copied.
  char* message = segment.slot(1, 0);
  for (size_t i = 0; i < layout.slotBytes; ++i) message[i] = static_cast<char>(i * 7 + 3);
  std::vector<char> before(bytes, 0);
  std::copy(ring, ring + sizeof(ShmRingHeader), before.begin());
  std::copy(message, message + layout.slotBytes, before.begin() + (message - ring));
  size_t pages = 0;
  ASSERT_LT(residentPages(ring, bytes, &pages), pages) << "the segment is sparse until used";

  segment.prefaultRing(1);

  EXPECT_EQ(residentPages(ring, bytes, &pages), pages);
  EXPECT_EQ(std::vector<char>(ring, ring + bytes), before);
}

}  // namespace
}  // namespace weft
