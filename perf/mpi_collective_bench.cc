// Open MPI's collectives measured the way weft's nccl-tests-compatible tools (all_reduce_perf,
// all_gather_perf, ...) measure weft, for perf/compare.py's side-by-side table: float (sum for
// the reductions), out of place (MPI_Bcast in place: its API has one buffer), root 0 for the
// rooted ones, buffers allocated once at the largest size and faulted in before timing, -w
// warm-up calls and -n timed calls per size after a barrier; the time is the ranks' average.
// Sizes and bus bandwidth follow nccl-tests: all_reduce, broadcast and reduce move size = count *
// 4 bytes; all_gather, reduce_scatter and alltoall size = the total (n blocks of count floats,
// count = size/n/4 rounded down to 16 bytes); busbw = algbw * 2(n-1)/n for all_reduce, (n-1)/n
// for all_gather, reduce_scatter and alltoall, 1 for broadcast and reduce. cpu_us is the
// process's CPU time per call (what spinning costs a trainer's compute). The result is checked
// once per size, whole, against what the ranks' inputs make. One line per size:
//   size count time_us algbw_GBps busbw_GBps cpu_us
// usage: mpi_collective_bench [--collective all_reduce] [-b 8] [-e 64M] [-f 2] [-n 20] [-w 5]
//   --collective: all_reduce (MPI_Allreduce), all_gather (MPI_Allgather), reduce_scatter
//   (MPI_Reduce_scatter_block), broadcast (MPI_Bcast), reduce (MPI_Reduce), alltoall (MPI_Alltoall)
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "perf/perf_options.h"

namespace {

double cpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

enum class Coll { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kReduce, kAlltoall };

struct CollInfo {
  Coll coll;
  const char* name;     // --collective, weft's <name>_perf
  const char* mpiName;  // in the header line
  bool blocks;          // size = n blocks of count floats (nccl-tests' all-gather convention)
};

constexpr CollInfo kColls[] = {
    {Coll::kAllReduce, "all_reduce", "MPI_Allreduce", false},
    {Coll::kAllGather, "all_gather", "MPI_Allgather", true},
    {Coll::kReduceScatter, "reduce_scatter", "MPI_Reduce_scatter_block", true},
    {Coll::kBroadcast, "broadcast", "MPI_Bcast", false},
    {Coll::kReduce, "reduce", "MPI_Reduce", false},
    {Coll::kAlltoall, "alltoall", "MPI_Alltoall", true},
};

struct Options {
  const CollInfo* coll = &kColls[0];
  size_t minBytes = 8, maxBytes = 64u << 20;
  size_t factor = 2;
  int iters = 20, warmup = 5;
};

bool parse(int argc, char** argv, Options* o, std::string* error) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      *error = flag + " needs a value";
      return false;
    }
    const char* value = argv[++i];
    if (flag == "--collective") {
      o->coll = nullptr;
      for (const CollInfo& c : kColls)
        if (c.name == std::string(value)) o->coll = &c;
      if (!o->coll) {
        *error = flag + ": '" + value +
                 "' is not a collective (all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall)";
        return false;
      }
    } else if (flag == "-b" || flag == "-e") {
      std::optional<size_t> bytes = weft::perf::parseSize(value);
      if (!bytes || *bytes == 0) {
        *error = flag + ": '" + value + "' is not a size";
        return false;
      }
      (flag == "-b" ? o->minBytes : o->maxBytes) = *bytes;
    } else if (flag == "-f" || flag == "-n" || flag == "-w") {
      const long v = std::strtol(value, nullptr, 10);
      if (v < (flag == "-w" ? 0 : flag == "-f" ? 2 : 1)) {
        *error = flag + ": '" + value + "' is out of range";
        return false;
      }
      if (flag == "-f") o->factor = static_cast<size_t>(v);
      if (flag == "-n") o->iters = static_cast<int>(v);
      if (flag == "-w") o->warmup = static_cast<int>(v);
    } else {
      *error = "unknown flag " + flag;
      return false;
    }
  }
  return true;
}

// Rank r's input at index i: small integers, so every sum is exact in float and a block taken
// from the wrong rank or the wrong offset shows.
float input(int rank, size_t i) { return static_cast<float>(rank * 16 + static_cast<int>(i % 16)); }

// Sum over the ranks of input(r, i).
float summed(int nranks, size_t i) {
  return static_cast<float>(16 * nranks * (nranks - 1) / 2 + nranks * static_cast<int>(i % 16));
}

constexpr float kUnwritten = -1.0f;  // never an input nor a sum

// Runs the collective once on count floats (per rank's block for the blocked ones).
void runOnce(Coll coll, int rank, float* send, float* recv, int count) {
  switch (coll) {
    case Coll::kAllReduce: MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case Coll::kAllGather: MPI_Allgather(send, count, MPI_FLOAT, recv, count, MPI_FLOAT, MPI_COMM_WORLD); break;
    case Coll::kReduceScatter: MPI_Reduce_scatter_block(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case Coll::kBroadcast:  // the root sends its input; the others receive into recv
      MPI_Bcast(rank == 0 ? send : recv, count, MPI_FLOAT, 0, MPI_COMM_WORLD);
      break;
    case Coll::kReduce: MPI_Reduce(send, recv, count, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD); break;
    case Coll::kAlltoall: MPI_Alltoall(send, count, MPI_FLOAT, recv, count, MPI_FLOAT, MPI_COMM_WORLD); break;
  }
}

// The first index of recv that differs from what the collective should have written there, or
// -1 (recv's elements a rank does not receive are not looked at).
long firstWrong(Coll coll, int rank, int nranks, const float* recv, size_t count) {
  auto scan = [&](size_t n, auto expected) -> long {
    for (size_t i = 0; i < n; ++i)
      if (recv[i] != expected(i)) return static_cast<long>(i);
    return -1;
  };
  switch (coll) {
    case Coll::kAllReduce: return scan(count, [&](size_t i) { return summed(nranks, i); });
    case Coll::kAllGather:  // block j is rank j's input
      return scan(count * nranks, [&](size_t i) { return input(static_cast<int>(i / count), i % count); });
    case Coll::kReduceScatter:  // rank r receives the sum of block r
      return scan(count, [&](size_t i) { return summed(nranks, static_cast<size_t>(rank) * count + i); });
    case Coll::kBroadcast: return rank == 0 ? -1 : scan(count, [&](size_t i) { return input(0, i); });
    case Coll::kReduce: return rank == 0 ? scan(count, [&](size_t i) { return summed(nranks, i); }) : -1;
    case Coll::kAlltoall:  // block j is block r of rank j's input
      return scan(count * nranks, [&](size_t i) {
        return input(static_cast<int>(i / count), static_cast<size_t>(rank) * count + i % count);
      });
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  Options o;
  std::string error;
  if (!parse(argc, argv, &o, &error)) {
    if (rank == 0) std::fprintf(stderr, "mpi_collective_bench: %s\n", error.c_str());
    MPI_Finalize();
    return 2;
  }
  const Coll coll = o.coll->coll;
  const double busFactor = coll == Coll::kAllReduce                            ? 2.0 * (nranks - 1) / nranks
                           : coll == Coll::kBroadcast || coll == Coll::kReduce ? 1.0
                                                                               : 1.0 * (nranks - 1) / nranks;
  // Every buffer holds at most size / 4 floats (the blocked ones: n blocks of count).
  const size_t maxCount = o.maxBytes / sizeof(float) + 1;
  std::vector<float> send(maxCount), recv(maxCount, kUnwritten);  // written now: faulted in
  for (size_t i = 0; i < maxCount; ++i) send[i] = input(rank, i);
  if (rank == 0)
    std::printf("# size count time_us algbw_GBps busbw_GBps cpu_us  (%s, %d ranks)\n", o.coll->mpiName, nranks);
  size_t lastSize = 0;
  for (size_t bytes = o.minBytes; bytes <= o.maxBytes; bytes *= o.factor) {
    // nccl-tests' counts: the blocked collectives move n blocks of a 16-byte multiple each.
    const size_t elems = bytes / sizeof(float);
    const size_t count = o.coll->blocks ? (elems / nranks) & ~static_cast<size_t>(16 / sizeof(float) - 1) : elems;
    const size_t size = count * (o.coll->blocks ? nranks : 1) * sizeof(float);
    if (count != 0 && size != lastSize) {
      lastSize = size;
      std::fill(recv.begin(), recv.begin() + size / sizeof(float), kUnwritten);
      const int n = static_cast<int>(count);
      for (int i = 0; i < o.warmup; ++i) runOnce(coll, rank, send.data(), recv.data(), n);
      MPI_Barrier(MPI_COMM_WORLD);
      const double cpu0 = cpuSeconds(), t0 = MPI_Wtime();
      for (int i = 0; i < o.iters; ++i) runOnce(coll, rank, send.data(), recv.data(), n);
      double seconds[2] = {(MPI_Wtime() - t0) / o.iters, (cpuSeconds() - cpu0) / o.iters}, sum[2] = {0, 0};
      MPI_Reduce(seconds, sum, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
      // The result is checked once per size: a benchmark of a wrong answer compares nothing.
      const long wrong = firstWrong(coll, rank, nranks, recv.data(), count);
      if (wrong >= 0) {
        std::fprintf(stderr, "mpi_collective_bench: %s: wrong result at %zu bytes on rank %d, element %ld: %g\n",
                     o.coll->name, size, rank, wrong, static_cast<double>(recv[static_cast<size_t>(wrong)]));
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      if (rank == 0) {
        const double time = sum[0] / nranks, algbw = static_cast<double>(size) / time / 1e9;
        std::printf("%zu %zu %.3f %.4f %.4f %.3f\n", size, count, time * 1e6, algbw, algbw * busFactor,
                    sum[1] / nranks * 1e6);
      }
    }
    if (bytes > o.maxBytes / o.factor) break;
  }
  MPI_Finalize();
  return 0;
}
