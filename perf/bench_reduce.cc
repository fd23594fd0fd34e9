// Bandwidth of reduceBuffers (sum) per type against memcpy at the same buffer sizes, of the
// ring's last copies out of a slot, and of reduceToTwo's streaming path (the ring's forwarded
// reductions and the direct all-reduce).
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
#include "common/reduce_to_two.h"
#include "common/streaming_copy.h"

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

// A ring's last receives: 512 KiB slices out of one cache-resident slot into a 64 MiB
// destination, with streamingCopy (non-temporal stores, a page prefetched ahead) and with
// memcpy (ordinary stores at this size: each destination line is read before it is written).
void BM_CopyFromSlot(benchmark::State& state, bool streaming) {
  constexpr size_t kBytes = size_t{64} << 20, kSlice = size_t{512} << 10;
  Bytes slot = makeBuffer(kSlice, 0x1), d = makeBuffer(kBytes, 0);
  for (auto _ : state) {
    for (size_t at = 0; at < kBytes; at += kSlice) {
      if (streaming)
        weft::streamingCopy(d.get() + at, slot.get(), kSlice);
      else
        std::memcpy(d.get() + at, slot.get(), kSlice);
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 2 * static_cast<int64_t>(kBytes));
}

// reduceToTwo, streaming, float sum over one rank's half of a 128 MiB all-reduce (64 MiB) in 1 MiB
// calls, as the ring in pieces makes them. Layouts: out of place with both destinations at the
// same offset within a 64-byte line (reduced and stored line by line), out of place with the
// second destination 32 bytes further (the 1 KiB tiles), and in place (the destinations are the
// sources). bytes_per_second counts 2 reads and 2 writes per byte of result.
enum class TwoLayout { SameLineOffset, OtherLineOffset, InPlace };

void BM_ReduceToTwo(benchmark::State& state, TwoLayout layout) {
  constexpr size_t kBytes = size_t{64} << 20, kCall = size_t{1} << 20;
  Bytes a = makeBuffer(kBytes, 0x1), b = makeBuffer(kBytes, 0x2);
  Bytes d = makeBuffer(kBytes, 0), d2 = makeBuffer(kBytes + 64, 0);
  unsigned char* to = layout == TwoLayout::InPlace ? a.get() : d.get();
  unsigned char* to2 =
      layout == TwoLayout::InPlace ? b.get() : d2.get() + (layout == TwoLayout::OtherLineOffset ? 32 : 0);
  for (auto _ : state) {
    for (size_t at = 0; at < kBytes; at += kCall)
      weft::reduceToTwo(to + at, to2 + at, a.get() + at, b.get() + at, kCall / 4, ncclFloat32, weft::ReduceOp::Sum,
                        /*streaming=*/true);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 4 * static_cast<int64_t>(kBytes));
  state.SetLabel(weft::kernelIsaName(weft::kernelIsa()));
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
BENCHMARK_CAPTURE(BM_CopyFromSlot, streaming, true)->UseRealTime();
BENCHMARK_CAPTURE(BM_CopyFromSlot, memcpy, false)->UseRealTime();
BENCHMARK_CAPTURE(BM_ReduceToTwo, out_of_place_lines, TwoLayout::SameLineOffset)->UseRealTime();
BENCHMARK_CAPTURE(BM_ReduceToTwo, out_of_place_tiles, TwoLayout::OtherLineOffset)->UseRealTime();
BENCHMARK_CAPTURE(BM_ReduceToTwo, in_place, TwoLayout::InPlace)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
