// A peer's shared-memory segment (its header and geometry), as mapped from its memfd.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

#include "transport/shm/shm_segment.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 1 << 20) return 0;
  int fd = memfd_create("fuzz-segment", MFD_CLOEXEC);
  if (fd < 0) return 0;
  // The input is the start of the file; the file is at least a header long, as real ones are.
  const size_t fileBytes = size > sizeof(weft::ShmSegmentHeader) ? size : sizeof(weft::ShmSegmentHeader);
  if (ftruncate(fd, static_cast<off_t>(fileBytes)) != 0 || pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) {
    close(fd);
    return 0;
  }
  weft::ShmSegment segment;
  if (segment.open(fd, 1) == ncclSuccess) {  // the segment owns fd now
    const weft::ShmLayout layout = segment.layout();
    for (int rank = 0; rank < layout.localSize; ++rank) {
      volatile char first = *segment.slot(rank, 0);
      volatile char last = *(segment.slot(rank, layout.slots - 1) + layout.slotBytes - 1);
      (void)first;
      (void)last;
    }
  }
  return 0;
}
