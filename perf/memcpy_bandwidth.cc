// The shared-memory ceiling that the all-reduce numbers are judged against: single-thread
// memcpy bandwidth (bytes read + written per second) on buffers faulted in beforehand, and the
// 2-rank all-reduce bounds that follow from it (docs/performance.md, "What limits it"):
//   bounce buffer, reduction fused into the forward: busbw <= memcpy / 4
//   peers reading each other's buffers directly:      busbw <= memcpy / 2.5
// And the round trip of one cache line between the first two CPUs this process may use: what
// every shared-memory handover costs. On the 2-vCPU VMs here it is 56 ns in some runs and
// 320 ns in others (the host places the vCPUs near each other or not), and shared-memory
// collectives are up to 8 times slower in the second case (docs/performance.md, "Run-to-run
// spread"), so every table carries it.
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace {

bool pinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

// Nanoseconds per round trip of one cache line between CPUs `a` and `b` (best of 3 runs of
// 200,000), or a negative value when the threads cannot be pinned there.
double cacheLineRoundTripNs(int a, int b) {
  alignas(64) static std::atomic<long> line{0};
  constexpr long kTrips = 200000;
  double best = -1;
  for (int run = 0; run < 3; ++run) {
    line.store(0);
    bool pinned = true;
    std::thread echo([&] {
      pinned = pinTo(b);
      for (long i = 0; i < kTrips; ++i) {
        while (line.load(std::memory_order_acquire) != 2 * i + 1) {}
        line.store(2 * i + 2, std::memory_order_release);
      }
    });
    cpu_set_t previous;
    pthread_getaffinity_np(pthread_self(), sizeof previous, &previous);
    const bool mine = pinTo(a);
    const auto start = std::chrono::steady_clock::now();
    for (long i = 0; i < kTrips; ++i) {
      line.store(2 * i + 1, std::memory_order_release);
      while (line.load(std::memory_order_acquire) != 2 * i + 2) {}
    }
    const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
    echo.join();
    pthread_setaffinity_np(pthread_self(), sizeof previous, &previous);
    if (!mine || !pinned) return -1;
    if (best < 0 || ns / kTrips < best) best = ns / kTrips;
  }
  return best;
}

// A source and a destination of `bytes` each, on huge pages where the kernel gives them, faulted
// in beforehand so that no timed copy pays a first touch.
class CopyBuffers {
 public:
  explicit CopyBuffers(size_t bytes)
      : bytes_(bytes),
        src_(static_cast<char*>(aligned_alloc(4096, bytes))),
        dst_(static_cast<char*>(aligned_alloc(4096, bytes))) {
    if (!src_ || !dst_) std::abort();
    madvise(src_, bytes, MADV_HUGEPAGE);
    madvise(dst_, bytes, MADV_HUGEPAGE);
    memset(src_, 1, bytes);
    memset(dst_, 2, bytes);
  }
  ~CopyBuffers() {
    free(src_);
    free(dst_);
  }
  CopyBuffers(const CopyBuffers&) = delete;
  CopyBuffers& operator=(const CopyBuffers&) = delete;

  // One timed memcpy, in seconds.
  double copySeconds() {
    const auto start = std::chrono::steady_clock::now();
    memcpy(dst_, src_, bytes_);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  // Keeps the copies observable, so that they cannot be optimized away.
  bool copied() const { return dst_[bytes_ / 2] == 1; }

 private:
  size_t bytes_;
  char* src_;
  char* dst_;
};

// Read+write GB/s that each of two threads pinned to CPUs `a` and `b` reaches while both copy
// their own buffers at the same time: what two ranks of an all-reduce get, where the ceiling
// above is one thread alone. The slower thread of each round counts (a rank waits for its
// peer), best of `repeats` rounds; negative when the threads cannot be pinned there.
double concurrentMemcpyRate(size_t bytes, int repeats, int a, int b) {
  std::atomic<int> arrived{0};
  double seconds[2][64] = {};
  bool pinned[2] = {false, false};
  repeats = std::min(repeats, 64);
  auto copier = [&](int self, int cpu) {
    pinned[self] = pinTo(cpu);
    CopyBuffers buffers(bytes);  // faulted in by this thread: its own node's memory
    for (int i = 0; i < repeats; ++i) {
      // Both start each round together.
      arrived.fetch_add(1);
      while (arrived.load() < 2 * (i + 1)) {}
      seconds[self][i] = buffers.copySeconds();
    }
    if (!buffers.copied()) std::abort();
  };
  cpu_set_t previous;
  pthread_getaffinity_np(pthread_self(), sizeof previous, &previous);
  std::thread second(copier, 1, b);
  copier(0, a);
  second.join();
  pthread_setaffinity_np(pthread_self(), sizeof previous, &previous);
  if (!pinned[0] || !pinned[1]) return -1;
  double best = 0;
  for (int i = 0; i < repeats; ++i) best = std::max(best, 2.0 * bytes / std::max(seconds[0][i], seconds[1][i]) / 1e9);
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  size_t bytes = argc > 1 ? strtoull(argv[1], nullptr, 0) : (256u << 20);
  int repeats = argc > 2 ? atoi(argv[2]) : 8;
  CopyBuffers buffers(bytes);
  double best = 0;
  for (int i = 0; i < repeats; ++i) best = std::max(best, 2.0 * bytes / buffers.copySeconds() / 1e9);
  printf("# memcpy ceiling (1 thread, %zu MiB, read+write): %.2f GB/s\n", bytes >> 20, best);
  printf("# 2-rank all-reduce busbw bounds: bounce buffer %.2f GB/s (memcpy/4), direct %.2f GB/s (memcpy/2.5)\n",
         best / 4, best / 2.5);
  cpu_set_t allowed;
  int cpus[2] = {-1, -1}, found = 0;
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0)
    for (int c = 0; c < CPU_SETSIZE && found < 2; ++c)
      if (CPU_ISSET(c, &allowed)) cpus[found++] = c;
  const double together = found == 2 ? concurrentMemcpyRate(bytes, repeats, cpus[0], cpus[1]) : -1;
  if (together > 0)
    printf("# memcpy, 2 threads at once (CPUs %d and %d, %zu MiB each, read+write): %.2f GB/s each\n", cpus[0], cpus[1],
           bytes >> 20, together);
  else
    printf("# memcpy, 2 threads at once: not measured (not two CPUs to pin to)\n");
  const double roundTrip = found == 2 ? cacheLineRoundTripNs(cpus[0], cpus[1]) : -1;
  if (roundTrip > 0)
    printf("# cache-line round trip between CPUs %d and %d: %.0f ns\n", cpus[0], cpus[1], roundTrip);
  else
    printf("# cache-line round trip: not measured (fewer than two CPUs to pin to)\n");
  return buffers.copied() ? 0 : 2;
}
