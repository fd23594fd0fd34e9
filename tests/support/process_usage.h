// What this process holds right now, read from /proc/self: the leak tests compare these
// before and after many loops, and the fork helpers refuse to fork while a thread runs.
#pragma once

#include <cstdint>

namespace weft::testing {

// Threads of this process (entries of /proc/self/task); fork is only safe at 1.
int threadsInThisProcess();

// Starts and joins one thread. ThreadSanitizer starts a thread of its own along with a program's
// first thread; call this before taking a thread-count baseline so that its thread is in it.
void startThreadRuntime();

// Open file descriptors (entries of /proc/self/fd, less the one the listing itself uses).
int openFileDescriptors();

// Resident memory (VmRSS) and address space (VmSize) in KiB, from /proc/self/status; -1 if unreadable.
int64_t residentKiB();
int64_t addressSpaceKiB();

// Lines of /proc/self/maps: one per mapping, so a mapping that is never released shows.
int memoryMappings();

// Under AddressSanitizer or ThreadSanitizer freed memory waits in a quarantine and the runtime maps
// shadow and allocator regions as it goes: resident memory and mappings then say nothing about
// leaks (descriptors and threads still do), and everything runs several times slower.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kUnderMemorySanitizer = true;
#else
inline constexpr bool kUnderMemorySanitizer = false;
#endif

}  // namespace weft::testing
