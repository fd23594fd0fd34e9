#include "transport/shm/shm_segment.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "common/log.h"
#include "common/status.h"

namespace weft {

ShmSegment::~ShmSegment() {
  if (base_) munmap(base_, bytes_);
  if (fd_ >= 0) close(fd_);
}

ncclResult_t ShmSegment::create(const ShmLayout& layout) {
  if (layout.slots == 0 || layout.slots > 64 || layout.slotBytes == 0 || layout.slotBytes % 64)
    return fail(ncclInvalidArgument,
                "shm: bad ring geometry (%u slots of %zu bytes; slots must be 1..64, bytes a multiple of 64)",
                layout.slots, layout.slotBytes);
  layout_ = layout;
  bytes_ = layout.totalBytes();
  fd_ = memfd_create("weft-shm", MFD_CLOEXEC);
  if (fd_ < 0) return fail(ncclSystemError, "shm: memfd_create failed: %s", strerror(errno));
  if (ftruncate(fd_, static_cast<off_t>(bytes_)) != 0)
    return fail(ncclSystemError, "shm: cannot size segment to %zu bytes: %s", bytes_, strerror(errno));
  base_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (base_ == MAP_FAILED) {
    base_ = nullptr;
    return fail(ncclSystemError, "shm: mmap of %zu bytes failed: %s", bytes_, strerror(errno));
  }
  auto* h = new (base_) ShmSegmentHeader();
  h->pid = getpid();
  h->localSize = layout.localSize;
  h->slotBytes = layout.slotBytes;
  h->slots = layout.slots;
  // Default-initialized (the file is zero already): only the atomics are written, so a ring's
  // mailbox pages are not faulted in before the ring is used.
  for (int i = 0; i < layout.localSize; ++i) new (ring(i)) ShmRingHeader;
  std::atomic_thread_fence(std::memory_order_release);
  h->magic = kShmSegmentMagic;
  return ncclSuccess;
}

ncclResult_t ShmSegment::open(int fd, int peerRank) {
  fd_ = fd;
  off_t size = lseek(fd_, 0, SEEK_END);
  if (size < static_cast<off_t>(sizeof(ShmSegmentHeader)))
    return fail(ncclSystemError, "shm: rank %d's segment is too small (%lld bytes)", peerRank, (long long)size);
  bytes_ = static_cast<size_t>(size);
  base_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (base_ == MAP_FAILED) {
    base_ = nullptr;
    return fail(ncclSystemError, "shm: mmap of peer segment failed: %s", strerror(errno));
  }
  // The geometry comes from the peer, through memory it can still write: read once, checked,
  // and only the checked copy used from here on. Slots index the ring header's 64 sizes.
  const ShmSegmentHeader* h = header();
  const uint64_t magic = h->magic, slotBytes = h->slotBytes;
  const uint32_t slots = h->slots;
  const int32_t localSize = h->localSize;
  if (magic != kShmSegmentMagic)
    return fail(ncclSystemError, "shm: rank %d's segment is not a weft segment (magic %016llx)", peerRank,
                static_cast<unsigned long long>(magic));
  if (slots == 0 || slots > 64 || slotBytes == 0 || slotBytes % 64 || slotBytes > kMaxShmSlotBytes)
    return fail(ncclSystemError, "shm: rank %d's segment has a bad ring geometry (%u slots of %llu bytes)", peerRank,
                slots, static_cast<unsigned long long>(slotBytes));
  if (localSize < 1 || localSize > kMaxShmLocalRanks)
    return fail(ncclSystemError, "shm: rank %d's segment claims %d local ranks", peerRank, localSize);
  layout_ = ShmLayout{slotBytes, slots, localSize};
  if (layout_.totalBytes() != bytes_)
    return fail(ncclSystemError, "shm: rank %d's segment is %zu bytes, its header says %zu", peerRank, bytes_,
                layout_.totalBytes());
  return ncclSuccess;
}

ShmLayout ShmSegment::layout() const { return layout_; }

ShmRingHeader* ShmSegment::ring(int senderLocal) const {
  return reinterpret_cast<ShmRingHeader*>(static_cast<char*>(base_) + layout().ringOffset(senderLocal));
}

char* ShmSegment::slot(int senderLocal, uint64_t index) const {
  return reinterpret_cast<char*>(ring(senderLocal)) + sizeof(ShmRingHeader) + index * layout_.slotBytes;
}

void ShmSegment::prefaultRing(int senderLocal) const {
  // Each page is written once here, by an atomic add of zero: a page's first write costs this
  // VM several microseconds that no fault counter shows, even after a read or
  // MADV_POPULATE_WRITE mapped it, and rings first written by timed calls made them up to 5x
  // slower (docs/performance.md, "The staging rings' first writes"). Adding zero atomically
  // keeps whatever the peer may already have put in the ring, even while it writes.
  // A ring may start inside a page: one byte of every page it touches, its own bytes only.
  const uintptr_t start = reinterpret_cast<uintptr_t>(ring(senderLocal));
  const uintptr_t end = start + layout().ringBytes();
  for (uintptr_t page = start & ~uintptr_t(4095); page < end; page += 4096)
    std::atomic_ref<char>(*reinterpret_cast<char*>(std::max(page, start))).fetch_add(0, std::memory_order_relaxed);
}

void futexWake(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, 1, nullptr, nullptr, 0);
}

void futexWait(std::atomic<uint32_t>* word, uint32_t expected, long timeoutMicros) {
  timespec timeout{timeoutMicros / 1000000, (timeoutMicros % 1000000) * 1000};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &timeout, nullptr, 0);
}

}  // namespace weft
