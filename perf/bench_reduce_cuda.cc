// CUDA reduction kernels (common/cuda/reduce.h) on 64 MiB buffers of device memory, beside
// cudaMemcpyAsync device to device of the same 64 MiB measured in the same run (the ceiling).
// Each benchmark reports its memory traffic: the counter `traffic` is the bytes it reads and
// writes per call in units of 64 MiB (a copy 2, a reduction 3, a scale or division 2), and
// bytes_per_second counts that traffic, so a kernel at the copy's speed shows the copy's GB/s.
//
// Timing: perf/cuda_bench.h (kBatch calls back to back on one stream between two CUDA
// events); buffers, stream and events made once.
//
//   bench_reduce_cuda --benchmark_min_time=0.05
// Without a usable CUDA device it prints "skipped: no usable CUDA device: <reason>" and exits 0.
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/cuda/reduce.h"
#include "common/dtype.h"
#include "common/numeric.h"
#include "perf/cuda_bench.h"

namespace {

using namespace weft;
using perf::cudaWhy;
using perf::timeCudaBatches;

constexpr size_t kBytes = 64ull << 20;
constexpr int kBatch = 8;

struct Device {
  perf::CudaTiming timing;
  void* a = nullptr;  // inputs: random finite values of the benchmark's type
  void* b = nullptr;
  void* out = nullptr;
  void* scalar = nullptr;  // PreMulSum's factor, on the device
};
Device dev;

std::string setUp() {
  std::string why = openDevice(&dev.timing);
  if (!why.empty()) return why;
  cudaError_t err;
  if ((err = cudaMalloc(&dev.a, kBytes)) != cudaSuccess || (err = cudaMalloc(&dev.b, kBytes)) != cudaSuccess ||
      (err = cudaMalloc(&dev.out, kBytes)) != cudaSuccess || (err = cudaMalloc(&dev.scalar, 8)) != cudaSuccess ||
      (err = cudaMemset(dev.out, 0, kBytes)) != cudaSuccess)
    return cudaWhy("allocating 64 MiB buffers", err);
  return "";
}

void tearDown() {
  for (void* p : {dev.a, dev.b, dev.out, dev.scalar}) cudaFree(p);
  closeDevice(&dev.timing);
}

// Fills a and b with values of `type` in [0.5, 1.5) (integers: 0 to 6; a 64 KiB pattern
// repeated), and the scalar with 1. Kept while the type stays the same.
int filled = -1;  // the type the inputs hold, -1 after they were overwritten

std::string fillInputs(ncclDataType_t type) {
  if (filled == static_cast<int>(type)) return "";
  const size_t size = dataTypeSize(type), patternBytes = 64 << 10;
  std::vector<char> host(kBytes);
  std::mt19937 gen(static_cast<unsigned>(type));
  std::uniform_real_distribution<double> uniform(0.5, 1.5);
  for (void* target : {dev.a, dev.b}) {
    for (size_t i = 0; i < patternBytes / size; ++i)
      fromDouble(isFloatingType(type) ? uniform(gen) : static_cast<double>(gen() % 7), &host[i * size], type);
    for (size_t at = patternBytes; at < kBytes; at += patternBytes) std::memcpy(&host[at], host.data(), patternBytes);
    cudaError_t err = cudaMemcpy(target, host.data(), kBytes, cudaMemcpyHostToDevice);
    if (err != cudaSuccess) return cudaWhy("writing the inputs", err);
  }
  char one[8];
  fromDouble(1.0, one, type);
  cudaError_t err = cudaMemcpy(dev.scalar, one, size, cudaMemcpyHostToDevice);
  if (err != cudaSuccess) return cudaWhy("writing the scalar", err);
  filled = static_cast<int>(type);
  return "";
}

std::string weftWhy(const char* what, ncclResult_t r) {
  return r == ncclSuccess ? ""
                          : std::string(what) + ": " + ncclGetErrorString(r) + " (" + ncclGetLastError(nullptr) + ")";
}

// Mean time per call of kBatch calls in a row (perf/cuda_bench.h); bytes/s of traffic.
template <typename Call>
void timeBatches(benchmark::State& state, double traffic, Call&& call) {
  timeCudaBatches(state, dev.timing, kBatch, [&](uint64_t) { return call(); });
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * traffic * kBytes));
  state.counters["traffic"] = traffic;
}

void BM_MemcpyD2D(benchmark::State& state) {
  timeBatches(state, 2, [] {
    cudaError_t err = cudaMemcpyAsync(dev.out, dev.a, kBytes, cudaMemcpyDeviceToDevice, dev.timing.stream);
    return err == cudaSuccess ? std::string() : cudaWhy("cudaMemcpyAsync", err);
  });
  state.SetLabel("memcpy_d2d");
}

// out = a op b, or a = a op b in place.
void BM_Reduce(benchmark::State& state, ncclDataType_t type, ReduceOp op, bool inPlace) {
  const std::string why = fillInputs(type);
  if (!why.empty()) return state.SkipWithError(why.c_str());
  void* dst = inPlace ? dev.a : dev.out;
  const size_t count = kBytes / dataTypeSize(type);
  timeBatches(state, 3, [&] {
    return weftWhy("reduceBuffers", cuda::reduceBuffers(dst, dev.a, dev.b, count, type, op, dev.timing.stream));
  });
  if (inPlace) filled = -1;  // a now holds sums
  state.SetLabel(std::string(dataTypeName(type)) + (inPlace ? ", in place" : ""));
}

// PreMulSum's scaling by a device scalar, and ncclAvg's division.
void BM_Scale(benchmark::State& state, ncclDataType_t type) {
  const std::string why = fillInputs(type);
  if (!why.empty()) return state.SkipWithError(why.c_str());
  const size_t count = kBytes / dataTypeSize(type);
  timeBatches(state, 2, [&] {
    return weftWhy("scaleBuffer", cuda::scaleBuffer(dev.out, dev.a, count, type, dev.scalar, cuda::ScalarAt::Device,
                                                    dev.timing.stream));
  });
  state.SetLabel(dataTypeName(type));
}

void BM_Divide(benchmark::State& state, ncclDataType_t type) {
  const std::string why = fillInputs(type);
  if (!why.empty()) return state.SkipWithError(why.c_str());
  const size_t count = kBytes / dataTypeSize(type);
  timeBatches(state, 2, [&] {
    return weftWhy("divideBuffer", cuda::divideBuffer(dev.out, dev.a, count, type, 3, dev.timing.stream));
  });
  state.SetLabel(dataTypeName(type));
}

void registerAll() {
  auto common = [](benchmark::internal::Benchmark* b) { b->Unit(benchmark::kMicrosecond)->UseManualTime(); };
  common(benchmark::RegisterBenchmark("BM_MemcpyD2D", BM_MemcpyD2D));
  for (ncclDataType_t type : {ncclFloat32, ncclFloat16, ncclBfloat16, ncclFloat8e4m3, ncclFloat64, ncclInt32, ncclInt8})
    common(benchmark::RegisterBenchmark("BM_ReduceSum", BM_Reduce, type, ReduceOp::Sum, false));
  common(benchmark::RegisterBenchmark("BM_ReduceSum", BM_Reduce, ncclFloat32, ReduceOp::Sum, true));
  common(benchmark::RegisterBenchmark("BM_ReduceMax", BM_Reduce, ncclFloat32, ReduceOp::Max, false));
  common(benchmark::RegisterBenchmark("BM_ReduceMax", BM_Reduce, ncclBfloat16, ReduceOp::Max, false));
  for (ncclDataType_t type : {ncclFloat32, ncclBfloat16}) {
    common(benchmark::RegisterBenchmark("BM_ScaleDeviceScalar", BM_Scale, type));
    common(benchmark::RegisterBenchmark("BM_Divide", BM_Divide, type));
  }
  common(benchmark::RegisterBenchmark("BM_Divide", BM_Divide, ncclInt32));
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const std::string why = setUp();
  if (!why.empty()) {
    std::printf("skipped: no usable CUDA device: %s\n", why.c_str());
    tearDown();
    return 0;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) benchmark::AddCustomContext("cuda_device", prop.name);
  registerAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  tearDown();
  return 0;
}
