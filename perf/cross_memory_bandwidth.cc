// What a single copy through the kernel (cross-memory attach: process_vm_readv/writev, the way
// Open MPI's shared-memory transport moves large messages) would give weft's all-reduce on
// malloc'd buffers, beside memcpy on the same kind of pages in the same run.
//
// A malloc'd buffer cannot be mapped by a peer, so the bounce path copies it through shared
// slots (memcpy/4 bound). With cross-memory attach a rank could instead read its peer's half
// straight into a cache-sized staging buffer, reduce it there, and write the result straight
// into the peer's receive buffer: half the memory traffic, if the kernel copies at memcpy's
// rate. It pins every page it copies first, so this measures whether it does, and then runs
// that all-reduce itself (2 processes, float sum, out of place, results checked) for a busbw to
// set beside `weftrun -n 2 all_reduce_perf -R 0` at the same size (docs/performance.md, "A
// single copy through the kernel").
//
// Usage: cross_memory_bandwidth [BYTES (default 128 MiB)] [ROUNDS (default 3)]
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "common/reduce.h"
#include "common/streaming_copy.h"

namespace {

// A buffer faulted in beforehand, on 4 KiB pages (what malloc gives a large buffer where
// transparent huge pages are "madvise" or "never") or on huge pages where the kernel gives them.
char* faultedBuffer(size_t bytes, bool hugePages, int fill) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    perror("mmap");
    exit(2);
  }
  madvise(p, bytes, hugePages ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  memset(p, fill, bytes);
  return static_cast<char*>(p);
}

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// Exits (3) unless the kernel moved all `want` bytes.
void checked(ssize_t moved, size_t want, const char* what) {
  if (moved == static_cast<ssize_t>(want)) return;
  fprintf(stderr, "%s: %s\n", what, moved < 0 ? strerror(errno) : "short copy");
  exit(3);
}

struct Rates {
  double memcpyIn = 0;   // memory -> cache-sized staging, GB/s of bytes moved
  double readIn = 0;     // peer's memory -> staging, process_vm_readv
  double memcpyOut = 0;  // memory -> memory
  double writeOut = 0;   // this process's memory -> peer's memory, process_vm_writev
};

// Best of `rounds` for each way, in pieces of `piece` bytes (the unit a rank would hand the
// kernel per slice). `remote` is the peer's buffer at the same size.
Rates measure(pid_t peer, char* remote, char* local, char* other, size_t bytes, size_t piece, int rounds) {
  std::vector<char> staging(piece);
  Rates best;
  auto keep = [&](double& slot, double s) { slot = std::max(slot, bytes / s / 1e9); };
  for (int round = 0; round < rounds; ++round) {
    auto start = std::chrono::steady_clock::now();
    for (size_t at = 0; at < bytes; at += piece) memcpy(staging.data(), local + at, piece);
    keep(best.memcpyIn, seconds(start));
    start = std::chrono::steady_clock::now();
    for (size_t at = 0; at < bytes; at += piece) {
      iovec to{staging.data(), piece}, from{remote + at, piece};
      checked(process_vm_readv(peer, &to, 1, &from, 1, 0), piece, "process_vm_readv");
    }
    keep(best.readIn, seconds(start));
    start = std::chrono::steady_clock::now();
    for (size_t at = 0; at < bytes; at += piece) memcpy(other + at, local + at, piece);
    keep(best.memcpyOut, seconds(start));
    start = std::chrono::steady_clock::now();
    for (size_t at = 0; at < bytes; at += piece) {
      iovec from{local + at, piece}, to{remote + at, piece};
      checked(process_vm_writev(peer, &from, 1, &to, 1, 0), piece, "process_vm_writev");
    }
    keep(best.writeOut, seconds(start));
  }
  return best;
}

// What the two processes of the all-reduce share: a barrier and where each one's buffers are.
struct AllReduceMeeting {
  std::atomic<int> arrived;
  pid_t pid[2];
  uintptr_t send[2];
  uintptr_t recv[2];
};

void meet(AllReduceMeeting* m, int* generation) {
  ++*generation;
  m->arrived.fetch_add(1);
  while (m->arrived.load() < 2 * *generation) {}
}

// One rank of the all-reduce: it reduces half `rank` of the buffer, a piece at a time: the
// peer's piece read into a staging buffer, its own send piece added there, the result streamed
// into its own receive buffer and written into the peer's. Returns the best call's seconds
// (rank 0) after checking every element of its receive buffer.
double allReduceRank(AllReduceMeeting* m, int rank, size_t bytes, bool hugePages, size_t piece, int rounds) {
  char* send = faultedBuffer(bytes, hugePages, 0);
  char* recv = faultedBuffer(bytes, hugePages, 0);
  std::vector<char> staging(piece);
  const size_t count = bytes / sizeof(float);
  for (size_t i = 0; i < count; ++i) reinterpret_cast<float*>(send)[i] = static_cast<float>(i % 1000 + rank);
  m->pid[rank] = getpid();
  m->send[rank] = reinterpret_cast<uintptr_t>(send);
  m->recv[rank] = reinterpret_cast<uintptr_t>(recv);
  int generation = 0;
  meet(m, &generation);
  const int peer = 1 - rank;
  const size_t half = bytes / 2, first = rank * half;
  double best = 1e30;
  for (int call = 0; call < rounds + 2; ++call) {  // 2 warm-up calls
    meet(m, &generation);
    const auto start = std::chrono::steady_clock::now();
    for (size_t at = first; at < first + half; at += piece) {
      iovec here{staging.data(), piece}, there{reinterpret_cast<void*>(m->send[peer] + at), piece};
      checked(process_vm_readv(m->pid[peer], &here, 1, &there, 1, 0), piece, "process_vm_readv");
      weft::reduceBuffers(staging.data(), staging.data(), send + at, piece / sizeof(float), ncclFloat32,
                          weft::ReduceOp::Sum);
      weft::streamingCopyUnfenced(recv + at, staging.data(), piece);
      there.iov_base = reinterpret_cast<void*>(m->recv[peer] + at);
      checked(process_vm_writev(m->pid[peer], &here, 1, &there, 1, 0), piece, "process_vm_writev");
    }
    weft::streamingFence();
    meet(m, &generation);  // both halves are in both receive buffers
    if (call >= 2) best = std::min(best, seconds(start));
  }
  for (size_t i = 0; i < count; ++i)
    if (reinterpret_cast<float*>(recv)[i] != static_cast<float>(2 * (i % 1000) + 1)) {
      fprintf(stderr, "rank %d: element %zu is wrong\n", rank, i);
      exit(4);
    }
  munmap(send, bytes);
  munmap(recv, bytes);
  return best;
}

// busbw (= algbw for 2 ranks) of the best of `rounds` calls; exits non-zero on a wrong result.
double allReduceBusBw(size_t bytes, bool hugePages, size_t piece, int rounds) {
  void* shared = mmap(nullptr, sizeof(AllReduceMeeting), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) exit(2);
  auto* meeting = new (shared) AllReduceMeeting{};
  const pid_t child = fork();
  if (child == 0) {
    allReduceRank(meeting, 1, bytes, hugePages, piece, rounds);
    _exit(0);
  }
  const double best = allReduceRank(meeting, 0, bytes, hugePages, piece, rounds);
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) exit(4);
  munmap(shared, sizeof(AllReduceMeeting));
  return bytes / best / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t bytes = argc > 1 ? strtoull(argv[1], nullptr, 0) : (128u << 20);
  const int rounds = argc > 2 ? atoi(argv[2]) : 3;
  printf("# cross-memory attach against memcpy, %zu MiB, best of %d rounds, GB/s of bytes moved\n", bytes >> 20,
         rounds);
  printf(
      "| pages | piece | memcpy to staging | process_vm_readv to staging | memcpy to memory | "
      "process_vm_writev to peer |\n|---|---:|---:|---:|---:|---:|\n");
  for (bool hugePages : {false, true}) {
    int ready[2], done[2];
    if (pipe(ready) != 0 || pipe(done) != 0) return 2;
    const pid_t peer = fork();
    if (peer == 0) {  // the peer: holds a faulted-in buffer until told to go
      char* buffer = faultedBuffer(bytes, hugePages, 1);
      if (write(ready[1], &buffer, sizeof buffer) != sizeof buffer) _exit(2);
      char go;
      _exit(read(done[0], &go, 1) == 1 ? 0 : 2);
    }
    char* remote = nullptr;
    if (read(ready[0], &remote, sizeof remote) != sizeof remote) return 2;
    char* local = faultedBuffer(bytes, hugePages, 2);
    char* other = faultedBuffer(bytes, hugePages, 3);
    for (size_t piece : {size_t{256} << 10, size_t{1} << 20, size_t{4} << 20}) {
      const Rates r = measure(peer, remote, local, other, bytes, piece, rounds);
      printf("| %s | %zu KiB | %.2f | %.2f | %.2f | %.2f |\n", hugePages ? "huge (madvise)" : "4 KiB", piece >> 10,
             r.memcpyIn, r.readIn, r.memcpyOut, r.writeOut);
    }
    if (write(done[1], "x", 1) != 1) return 2;
    waitpid(peer, nullptr, 0);
    munmap(local, bytes);
    munmap(other, bytes);
    for (int fd : {ready[0], ready[1], done[0], done[1]}) close(fd);
  }
  const int calls = 20;  // as all_reduce_perf -n 20: the best of 20 calls after warm-up
  printf(
      "\n# 2-rank all-reduce through cross-memory attach, float sum, out of place, %zu MiB, best of %d "
      "calls, results checked\n| pages | piece | busbw (GB/s) |\n|---|---:|---:|\n",
      bytes >> 20, calls);
  for (bool hugePages : {false, true})
    for (size_t piece : {size_t{256} << 10, size_t{1} << 20})
      printf("| %s | %zu KiB | %.2f |\n", hugePages ? "huge (madvise)" : "4 KiB", piece >> 10,
             allReduceBusBw(bytes, hugePages, piece, calls));
  return 0;
}
