// Bandwidth of reduceBuffers (sum) per type against memcpy at the same buffer sizes.
// bytes_per_second counts bytes moved: reduce reads two buffers and writes one (3x the buffer
// size), memcpy reads one and writes one (2x). Buffers are allocated and touched once before
// the timed loop so page faults are not measured. Rates use wall time: on a shared machine
// CPU time would hide the memory stalls the rate is about.
//
//   bench_reduce --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <memory>

#include "common/dtype.h"
#include "common/reduce.h"

namespace {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Bytes = std::unique_ptr<unsigned char, FreeDeleter>;

// Page-aligned and pre-faulted, filled with small values (1.0 in most formats is fine; any
// pattern works for bandwidth but denormals or NaNs could slow some CPUs down).
Bytes makeBuffer(size_t bytes, unsigned char fill) {
  void* p = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  std::memset(p, fill, bytes);
  return Bytes(static_cast<unsigned char*>(p));
}

void BM_ReduceSum(benchmark::State& state, ncclDataType_t type) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  const size_t count = bytes / weft::dataTypeSize(type);
  Bytes a = makeBuffer(bytes, 0x1), b = makeBuffer(bytes, 0x2), d = makeBuffer(bytes, 0);
  for (auto _ : state) {
    weft::reduceBuffers(d.get(), a.get(), b.get(), count, type, weft::ReduceOp::Sum);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 3 * static_cast<int64_t>(bytes));
  state.SetLabel(weft::kernelIsaName(weft::kernelIsa()));
}

void BM_Memcpy(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  Bytes s = makeBuffer(bytes, 0x1), d = makeBuffer(bytes, 0);
  for (auto _ : state) {
    std::memcpy(d.get(), s.get(), bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 2 * static_cast<int64_t>(bytes));
}

// The latency path: a two-element float sum.
void BM_ReduceSumTiny(benchmark::State& state) {
  float a[2] = {1, 2}, b[2] = {3, 4}, d[2];
  for (auto _ : state) {
    weft::reduceBuffers(d, a, b, 2, ncclFloat32, weft::ReduceOp::Sum);
    benchmark::DoNotOptimize(d);
  }
}

void sizes(benchmark::internal::Benchmark* b) {
  for (int64_t bytes : {int64_t{64} << 10, int64_t{1} << 20, int64_t{64} << 20}) b->Arg(bytes);
}

BENCHMARK(BM_Memcpy)->Apply(sizes)->UseRealTime();
BENCHMARK_CAPTURE(BM_ReduceSum, float, ncclFloat32)->Apply(sizes)->UseRealTime();
BENCHMARK_CAPTURE(BM_ReduceSum, half, ncclFloat16)->Apply(sizes)->UseRealTime();
BENCHMARK_CAPTURE(BM_ReduceSum, bfloat16, ncclBfloat16)->Apply(sizes)->UseRealTime();
BENCHMARK_CAPTURE(BM_ReduceSum, double, ncclFloat64)->Apply(sizes)->UseRealTime();
BENCHMARK_CAPTURE(BM_ReduceSum, int32, ncclInt32)->Apply(sizes)->UseRealTime();
BENCHMARK(BM_ReduceSumTiny);

}  // namespace

BENCHMARK_MAIN();
