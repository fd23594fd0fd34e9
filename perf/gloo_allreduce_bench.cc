// Gloo's all-reduce (AllreduceRingChunked over its TCP transport, what PyTorch's gloo backend
// runs) measured the way all_reduce_perf measures weft, for perf/compare.py: float sum, in
// place (Gloo's API has no out-of-place form), buffers allocated once, -w warm-up and -n timed
// calls per size; the result is checked once per size. Rank 0's time (a ring keeps the ranks
// in step), busbw = algbw * 2(n-1)/n; cpu_us is the process's CPU time per call. Ranks from
// RANK and WORLD_SIZE (weftrun, torchrun), rendezvous through files in --store DIR. Gloo's
// device binds to --host's address, or to --iface's (the same name on every namespace host).
//   size count time_us algbw_GBps busbw_GBps cpu_us
// usage: gloo_allreduce_bench --store DIR [--host 127.0.0.1 | --iface NAME] [-b 8] [-e 64M] [-f 2]
//                             [-n 20] [-w 5]
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "perf/perf_options.h"

namespace {

double cpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double wallSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int envInt(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : -1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string store, host = "127.0.0.1", iface;
  size_t minBytes = 8, maxBytes = 64u << 20, factor = 2;
  int iters = 20, warmup = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--store") {
      store = value;
    } else if (flag == "--host") {
      host = value;
    } else if (flag == "--iface") {
      iface = value;
    } else if (flag == "-b" || flag == "-e") {
      std::optional<size_t> bytes = weft::perf::parseSize(value);
      if (!bytes || *bytes == 0) {
        std::fprintf(stderr, "gloo_allreduce_bench: %s: '%s' is not a size\n", flag.c_str(), value.c_str());
        return 2;
      }
      (flag == "-b" ? minBytes : maxBytes) = *bytes;
    } else if (flag == "-f") {
      factor = std::max<size_t>(2, std::strtoul(value.c_str(), nullptr, 10));
    } else if (flag == "-n") {
      iters = std::max(1, std::atoi(value.c_str()));
    } else if (flag == "-w") {
      warmup = std::max(0, std::atoi(value.c_str()));
    } else {
      std::fprintf(stderr, "gloo_allreduce_bench: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  const int rank = envInt("RANK"), nranks = envInt("WORLD_SIZE");
  if (store.empty() || rank < 0 || nranks < 1 || rank >= nranks) {
    std::fprintf(stderr, "gloo_allreduce_bench: needs --store DIR and RANK/WORLD_SIZE (run it under weftrun)\n");
    return 2;
  }
  gloo::transport::tcp::attr attr;
  if (iface.empty())
    attr.hostname = host;
  else
    attr.iface = iface;
  auto device = gloo::transport::tcp::CreateDevice(attr);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, nranks);
  gloo::rendezvous::FileStore files(store);
  context->connectFullMesh(files, device);

  const size_t maxCount = maxBytes / sizeof(float) + 1;
  std::vector<float> data(maxCount, 1.0f);  // written now: faulted in
  if (rank == 0)
    std::printf("# size count time_us algbw_GBps busbw_GBps cpu_us  (Gloo ring-chunked, %d ranks)\n", nranks);
  for (size_t bytes = minBytes; bytes <= maxBytes; bytes *= factor) {
    const int count = static_cast<int>(bytes / sizeof(float));
    if (count > 0) {
      std::vector<float*> pointers{data.data()};
      gloo::AllreduceRingChunked<float> allreduce(context, pointers, count);
      // Checked once: every rank holds ones, so the sum is nranks everywhere.
      std::fill(data.begin(), data.begin() + count, 1.0f);
      allreduce.run();
      if (data[0] != static_cast<float>(nranks) || data[count - 1] != static_cast<float>(nranks)) {
        std::fprintf(stderr, "gloo_allreduce_bench: wrong result at %zu bytes on rank %d\n", bytes, rank);
        return 1;
      }
      for (int i = 0; i < warmup; ++i) {
        std::fill(data.begin(), data.begin() + count, 0.0f);  // sums of zeros stay finite
        allreduce.run();
      }
      const double cpu0 = cpuSeconds(), t0 = wallSeconds();
      for (int i = 0; i < iters; ++i) allreduce.run();
      const double time = (wallSeconds() - t0) / iters, cpu = (cpuSeconds() - cpu0) / iters;
      if (rank == 0) {
        const double algbw = static_cast<double>(count) * sizeof(float) / time / 1e9;
        std::printf("%zu %d %.3f %.4f %.4f %.3f\n", static_cast<size_t>(count) * sizeof(float), count, time * 1e6,
                    algbw, algbw * 2.0 * (nranks - 1) / nranks, cpu * 1e6);
      }
    }
    if (bytes > maxBytes / factor) break;
  }
  // Every rank leaves only once all have finished: a rank that exits closes its connections, and
  // Gloo fails a peer still waiting in its last all-reduce ("Connection closed by peer"; seen in
  // CI across namespace hosts), even where that peer's data had all arrived. The barrier's own
  // last messages meet the same race, but then nothing is left to measure: ignored.
  std::fflush(stdout);
  try {
    gloo::BarrierAllToAll barrier(context);
    barrier.run();
  } catch (const gloo::IoException&) {}
  return 0;
}
