#include "transport/shm/shared_memory_pool.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "common/log.h"
#include "common/status.h"

namespace weft {

namespace {

struct Allocation {
  size_t bytes;
  int fd;
  uint64_t serial;
};

std::mutex registryMutex;
std::map<uintptr_t, Allocation>& registry() {
  static auto* allocations = new std::map<uintptr_t, Allocation>();  // outlives static destructors
  return *allocations;
}
std::atomic<uint64_t> nextSerial{1};

}  // namespace

ncclResult_t sharedAlloc(void** ptr, size_t bytes) {
  if (!ptr) return fail(ncclInvalidArgument, "ncclMemAlloc: ptr is NULL");
  if (bytes == 0) return fail(ncclInvalidArgument, "ncclMemAlloc: size is 0");
  size_t rounded = (bytes + 4095) & ~size_t(4095);
  int fd = memfd_create("weft-memalloc", MFD_CLOEXEC);
  if (fd < 0) return fail(ncclSystemError, "ncclMemAlloc: memfd_create failed: %s", strerror(errno));
  if (ftruncate(fd, static_cast<off_t>(rounded)) != 0) {
    int err = errno;
    close(fd);
    return fail(ncclSystemError, "ncclMemAlloc: cannot size %zu bytes: %s", rounded, strerror(err));
  }
  void* base = mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (base == MAP_FAILED) {
    int err = errno;
    close(fd);
    return fail(ncclSystemError, "ncclMemAlloc: mmap of %zu bytes failed: %s", rounded, strerror(err));
  }
  std::lock_guard<std::mutex> lock(registryMutex);
  registry()[reinterpret_cast<uintptr_t>(base)] = {rounded, fd, nextSerial++};
  *ptr = base;
  WEFT_INFO(kLogAlloc, "ncclMemAlloc: %zu bytes at %p (shared, fd %d)", rounded, base, fd);
  return ncclSuccess;
}

ncclResult_t sharedFree(void* ptr) {
  if (!ptr) return ncclSuccess;
  std::lock_guard<std::mutex> lock(registryMutex);
  auto it = registry().find(reinterpret_cast<uintptr_t>(ptr));
  if (it == registry().end()) return fail(ncclInvalidArgument, "ncclMemFree: %p was not returned by ncclMemAlloc", ptr);
  munmap(ptr, it->second.bytes);
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
  *out = {static_cast<int32_t>(getpid()), a.fd, a.serial, a.bytes, address - it->first};
  return true;
}

PeerBufferMapper::~PeerBufferMapper() {
  for (auto& [key, m] : mappings_) munmap(m.base, m.bytes);
}

ncclResult_t PeerBufferMapper::map(const SharedBufferLocation& location, char** out) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto key = std::make_tuple(location.pid, location.fd, location.serial);
  auto it = mappings_.find(key);
  if (it == mappings_.end()) {
    std::string path = "/proc/" + std::to_string(location.pid) + "/fd/" + std::to_string(location.fd);
    int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return fail(ncclSystemError, "cannot open peer buffer %s: %s", path.c_str(), strerror(errno));
    void* base = mmap(nullptr, location.bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    close(fd);
    if (base == MAP_FAILED)
      return fail(ncclSystemError, "cannot map peer buffer %s: %s", path.c_str(), strerror(errno));
    it = mappings_.emplace(key, Mapping{base, location.bytes}).first;
  }
  *out = static_cast<char*>(it->second.base) + location.offset;
  return ncclSuccess;
}

}  // namespace weft
