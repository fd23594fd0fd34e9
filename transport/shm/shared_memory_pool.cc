#include "transport/shm/shared_memory_pool.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "common/log.h"
#include "common/settings.h"
#include "common/status.h"

namespace weft {

namespace {

// Every allocation ends with one page more than the caller asked for, holding this word: the
// owner sets it in ncclMemFree, and peers that mapped the buffer release their mapping at their
// next look (PeerBufferMapper::releaseFreed), instead of holding the memory until their
// communicator is destroyed. The page lives in the shared memory itself, so it stays readable
// for as long as any mapping of the buffer does.
constexpr size_t kReleasePageBytes = 4096;

std::atomic<uint32_t>* releaseWord(void* base, size_t bytes) {
  return reinterpret_cast<std::atomic<uint32_t>*>(static_cast<char*>(base) + bytes);
}

struct Allocation {
  size_t bytes;  // the caller's part, rounded to pages; the release page follows it
  int fd;
  FdTicket ticket;
};

std::mutex registryMutex;
std::map<uintptr_t, Allocation>& registry() {
  static auto* allocations = new std::map<uintptr_t, Allocation>();  // outlives static destructors
  return *allocations;
}

}  // namespace

ncclResult_t sharedAlloc(void** ptr, size_t bytes) {
  size_t rounded = (bytes + 4095) & ~size_t(4095);
  int fd = memfd_create("weft-memalloc", MFD_CLOEXEC);
  if (fd < 0) return fail(ncclSystemError, "ncclMemAlloc: memfd_create failed: %s", strerror(errno));
  const size_t mapped = rounded + kReleasePageBytes;
  if (ftruncate(fd, static_cast<off_t>(mapped)) != 0) {
    int err = errno;
    close(fd);
    return fail(ncclSystemError, "ncclMemAlloc: cannot size %zu bytes: %s", rounded, strerror(err));
  }
  void* base = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (base == MAP_FAILED) {
    int err = errno;
    close(fd);
    return fail(ncclSystemError, "ncclMemAlloc: mmap of %zu bytes failed: %s", mapped, strerror(err));
  }
  FdTicket ticket;
  if (offerFileDescriptor(fd, &ticket) != ncclSuccess) {
    munmap(base, mapped);
    close(fd);
    return ncclSystemError;  // the broker's message stands
  }
  std::lock_guard<std::mutex> lock(registryMutex);
  registry()[reinterpret_cast<uintptr_t>(base)] = {rounded, fd, ticket};
  *ptr = base;
  WEFT_INFO(kLogAlloc, "ncclMemAlloc: %zu bytes at %p (shared, fd %d)", rounded, base, fd);
  return ncclSuccess;
}

ncclResult_t sharedFree(void* ptr) {
  if (!ptr) return ncclSuccess;
  std::lock_guard<std::mutex> lock(registryMutex);
  auto it = registry().find(reinterpret_cast<uintptr_t>(ptr));
  if (it == registry().end()) return fail(ncclInvalidArgument, "ncclMemFree: %p was not returned by ncclMemAlloc", ptr);
  withdrawFileDescriptor(it->second.ticket);
  releaseWord(ptr, it->second.bytes)->store(1, std::memory_order_release);
  munmap(ptr, it->second.bytes + kReleasePageBytes);
  close(it->second.fd);
  registry().erase(it);
  return ncclSuccess;
}

bool findSharedBuffer(const void* ptr, size_t bytes, SharedBufferLocation* out) {
  uintptr_t address = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(registryMutex);
  auto& allocations = registry();
  auto it = allocations.upper_bound(address);
  if (it == allocations.begin()) return false;
  --it;
  const Allocation& a = it->second;
  if (address + bytes > it->first + a.bytes) return false;
  *out = {a.ticket, a.bytes, address - it->first};
  return true;
}

PeerBufferMapper::~PeerBufferMapper() {
  for (auto& [key, m] : mappings_) munmap(m.base, m.bytes + kReleasePageBytes);
}

size_t PeerBufferMapper::releaseFreed() {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t released = 0;
  for (auto it = mappings_.begin(); it != mappings_.end();) {
    if (releaseWord(it->second.base, it->second.bytes)->load(std::memory_order_acquire) == 0) {
      ++it;
      continue;
    }
    munmap(it->second.base, it->second.bytes + kReleasePageBytes);
    it = mappings_.erase(it);
    ++released;
  }
  return released;
}

size_t PeerBufferMapper::size() {
  std::lock_guard<std::mutex> lock(mutex_);
  return mappings_.size();
}

ncclResult_t PeerBufferMapper::map(const SharedBufferLocation& location, char** out) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto key = std::make_pair(location.ticket.secret[0], location.ticket.secret[1]);
  auto it = mappings_.find(key);
  if (it == mappings_.end()) {
    int fd = -1;
    WEFT_CHECK(fetchFileDescriptor(location.ticket, settingDouble(Setting::WeftTimeout), &fd));
    void* base =
        mmap(nullptr, location.bytes + kReleasePageBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    const int err = errno;
    close(fd);
    if (base == MAP_FAILED)
      return fail(ncclSystemError, "cannot map a peer's ncclMemAlloc buffer (%llu bytes): %s",
                  static_cast<unsigned long long>(location.bytes), strerror(err));
    it = mappings_.emplace(key, Mapping{base, location.bytes}).first;
  }
  *out = static_cast<char*>(it->second.base) + location.offset;
  return ncclSuccess;
}

}  // namespace weft
