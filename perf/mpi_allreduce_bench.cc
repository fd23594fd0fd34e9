// MPI_Allreduce measured the way all_reduce_perf measures weft, for perf/compare.py's
// side-by-side table: float sum, out of place, buffers allocated once at the largest size and
// faulted in before timing, -w warm-up calls and -n timed calls per size after a barrier; the
// time is the ranks' average, busbw = algbw * 2(n-1)/n (nccl-tests' factor); cpu_us is the
// process's CPU time per call (what spinning costs a trainer's compute). One line per size:
//   size count time_us algbw_GBps busbw_GBps cpu_us
// usage: mpi_allreduce_bench [-b 8] [-e 64M] [-f 2] [-n 20] [-w 5]
#include <mpi.h>

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

struct Options {
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
    if (flag == "-b" || flag == "-e") {
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

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  Options o;
  std::string error;
  if (!parse(argc, argv, &o, &error)) {
    if (rank == 0) std::fprintf(stderr, "mpi_allreduce_bench: %s\n", error.c_str());
    MPI_Finalize();
    return 2;
  }
  const size_t maxCount = o.maxBytes / sizeof(float) + 1;
  std::vector<float> send(maxCount, 1.0f), recv(maxCount, 0.0f);  // written now: faulted in
  if (rank == 0) std::printf("# size count time_us algbw_GBps busbw_GBps cpu_us  (MPI_Allreduce, %d ranks)\n", nranks);
  for (size_t bytes = o.minBytes; bytes <= o.maxBytes; bytes *= o.factor) {
    const int count = static_cast<int>(bytes / sizeof(float));
    if (count == 0) continue;
    for (int i = 0; i < o.warmup; ++i)
      MPI_Allreduce(send.data(), recv.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    const double cpu0 = cpuSeconds(), t0 = MPI_Wtime();
    for (int i = 0; i < o.iters; ++i)
      MPI_Allreduce(send.data(), recv.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double seconds[2] = {(MPI_Wtime() - t0) / o.iters, (cpuSeconds() - cpu0) / o.iters}, sum[2] = {0, 0};
    MPI_Reduce(seconds, sum, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    // The result is checked once per size: a benchmark of a wrong answer compares nothing.
    if (recv[0] != static_cast<float>(nranks) || recv[count - 1] != static_cast<float>(nranks)) {
      std::fprintf(stderr, "mpi_allreduce_bench: wrong result at %zu bytes on rank %d\n", bytes, rank);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0) {
      const double time = sum[0] / nranks, algbw = static_cast<double>(count) * sizeof(float) / time / 1e9;
      std::printf("%zu %d %.3f %.4f %.4f %.3f\n", static_cast<size_t>(count) * sizeof(float), count, time * 1e6, algbw,
                  algbw * 2.0 * (nranks - 1) / nranks, sum[1] / nranks * 1e6);
    }
    if (bytes > o.maxBytes / o.factor) break;
  }
  MPI_Finalize();
  return 0;
}
