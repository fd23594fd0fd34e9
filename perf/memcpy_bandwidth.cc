// The shared-memory ceiling that the all-reduce numbers are judged against: single-thread
// memcpy bandwidth (bytes read + written per second) on buffers faulted in beforehand, and the
// 2-rank all-reduce bounds that follow from it (docs/performance.md, "What limits it"):
//   bounce buffer, reduction fused into the forward: busbw <= memcpy / 4
//   peers reading each other's buffers directly:      busbw <= memcpy / 2.5
#include <sys/mman.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  size_t bytes = argc > 1 ? strtoull(argv[1], nullptr, 0) : (256u << 20);
  int repeats = argc > 2 ? atoi(argv[2]) : 8;
  auto* src = static_cast<char*>(aligned_alloc(4096, bytes));
  auto* dst = static_cast<char*>(aligned_alloc(4096, bytes));
  if (!src || !dst) return 1;
  madvise(src, bytes, MADV_HUGEPAGE);
  madvise(dst, bytes, MADV_HUGEPAGE);
  memset(src, 1, bytes);
  memset(dst, 2, bytes);
  double best = 0;
  for (int i = 0; i < repeats; ++i) {
    auto start = std::chrono::steady_clock::now();
    memcpy(dst, src, bytes);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double rate = 2.0 * bytes / seconds / 1e9;
    if (rate > best) best = rate;
  }
  printf("# memcpy ceiling (1 thread, %zu MiB, read+write): %.2f GB/s\n", bytes >> 20, best);
  printf("# 2-rank all-reduce busbw bounds: bounce buffer %.2f GB/s (memcpy/4), direct %.2f GB/s (memcpy/2.5)\n",
         best / 4, best / 2.5);
  // Keep the copy observable so it cannot be optimized away.
  return dst[bytes / 2] == 1 ? 0 : 2;
}
