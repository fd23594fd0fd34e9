// CUDA codec throughput: GB/s of float32 input (64 MiB in device memory) for each encode,
// decode and decode-add of compression/cuda (fp16, bf16, int8 and int4 with both roundings,
// sign, exact and approximate top-k of 1%), beside cudaMemcpyAsync device to device of the
// same 64 MiB measured in the same run (the ceiling; GB/s counts the bytes copied).
//
// Timing: each iteration queues kBatch calls back to back on one stream between two CUDA
// events and reports their mean (benchmark's manual time), so the GPU never waits for the host
// between calls, as in a pipeline of chunks. Buffers, the stream, the events and top-k's
// workspace are allocated once, before the timed loops (a warm-up call grows top-k's cached
// workspace and loads the kernels).
//
//   bench_compression_cuda --benchmark_min_time=0.2
// Without a usable CUDA device it prints "skipped: no usable CUDA device: <reason>" and exits 0.
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "compression/cuda/codecs.h"
#include "compression/types.h"
#include "perf/cuda_bench.h"

namespace {

using namespace weft::compression;
using weft::perf::CudaTiming;
using weft::perf::cudaWhy;
using weft::perf::timeCudaBatches;

constexpr size_t kBytes = 64ull << 20;
constexpr size_t kCount = kBytes / sizeof(float);
constexpr int kBatch = 8;

// Device buffers shared by every benchmark, made once by main() on a usable device.
struct Device {
  CudaTiming timing;
  float* x = nullptr;    // the gradient: kCount normal floats
  float* out = nullptr;  // decode target / memcpy destination
  void* enc = nullptr;   // encoded chunk, the largest codec's size
  size_t encBytes = 0;
};
Device dev;

// Empty when the device is usable and the buffers are ready; else the reason.
std::string setUp(size_t encBytes) {
  std::string why = openDevice(&dev.timing);
  if (!why.empty()) return why;
  std::vector<float> host(kCount);
  std::mt19937 gen(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : host) v = normal(gen);
  dev.encBytes = encBytes;
  cudaError_t err;
  if ((err = cudaMalloc(&dev.x, kBytes)) != cudaSuccess || (err = cudaMalloc(&dev.out, kBytes)) != cudaSuccess ||
      (err = cudaMalloc(&dev.enc, encBytes)) != cudaSuccess ||
      (err = cudaMemcpy(dev.x, host.data(), kBytes, cudaMemcpyHostToDevice)) != cudaSuccess ||
      (err = cudaMemset(dev.out, 0, kBytes)) != cudaSuccess || (err = cudaMemset(dev.enc, 0, encBytes)) != cudaSuccess)
    return cudaWhy("allocating 64 MiB buffers", err);
  return "";
}

void tearDown() {
  cudaFree(dev.x);
  cudaFree(dev.out);
  cudaFree(dev.enc);
  closeDevice(&dev.timing);
}

struct Case {
  const char* label;
  CodecConfig config;
};

std::vector<Case> cases() {
  auto make = [](const char* label, CodecKind kind, Rounding rounding = Rounding::kNearest) {
    Case c{label, {}};
    c.config.kind = kind;
    c.config.rounding = rounding;
    c.config.topkRatio = 0.01;
    return c;
  };
  return {make("fp16", CodecKind::kFp16),
          make("bf16", CodecKind::kBf16),
          make("int8_rtn", CodecKind::kInt8),
          make("int8_sr", CodecKind::kInt8, Rounding::kStochastic),
          make("int4_rtn", CodecKind::kInt4),
          make("int4_sr", CodecKind::kInt4, Rounding::kStochastic),
          make("sign", CodecKind::kSign),
          make("topk_1pct", CodecKind::kTopK),
          make("topk_approx_1pct", CodecKind::kTopKApprox)};
}

// Mean time per call of kBatch calls in a row (perf/cuda_bench.h); GB/s of float32 input.
template <typename Call>
void timeBatches(benchmark::State& state, Call&& call) {
  timeCudaBatches(state, dev.timing, kBatch, call);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kBytes);
}

std::string codecWhy(const char* what, ncclResult_t r) {
  return r == ncclSuccess ? ""
                          : std::string(what) + ": " + ncclGetErrorString(r) + " (" + ncclGetLastError(nullptr) + ")";
}

void BM_MemcpyD2D(benchmark::State& state) {
  timeBatches(state, [](uint64_t) {
    cudaError_t err = cudaMemcpyAsync(dev.out, dev.x, kBytes, cudaMemcpyDeviceToDevice, dev.timing.stream);
    return err == cudaSuccess ? std::string() : cudaWhy("cudaMemcpyAsync", err);
  });
  state.SetLabel("memcpy_d2d");
}

// Encodes case `which` (seed = call number, so stochastic rounding draws anew each call).
void BM_Encode(benchmark::State& state) {
  const Case c = cases()[state.range(0)];
  timeBatches(state, [&](uint64_t call) {
    return codecWhy("encode",
                    cuda::encode(c.config, dev.x, kCount, dev.enc, EncodeContext{call, 0}, dev.timing.stream));
  });
  state.SetLabel(c.label);
}

// Decodes (out = x') or decode-adds (out += x') what one encode of the gradient produced.
void decodeBench(benchmark::State& state, bool accumulate) {
  const Case c = cases()[state.range(0)];
  std::string why =
      codecWhy("encode", cuda::encode(c.config, dev.x, kCount, dev.enc, EncodeContext{1, 0}, dev.timing.stream));
  if (!why.empty()) {
    state.SkipWithError(why.c_str());
    return;
  }
  timeBatches(state, [&](uint64_t) {
    return codecWhy("decode", cuda::decode(c.config, dev.enc, kCount, dev.out, accumulate, 1.0f, dev.timing.stream));
  });
  state.SetLabel(c.label);
}
void BM_Decode(benchmark::State& state) { decodeBench(state, false); }
void BM_DecodeAdd(benchmark::State& state) { decodeBench(state, true); }

void registerAll() {
  const int last = static_cast<int>(cases().size()) - 1;
  auto common = [](benchmark::internal::Benchmark* b) { b->Unit(benchmark::kMicrosecond)->UseManualTime(); };
  common(benchmark::RegisterBenchmark("BM_MemcpyD2D", BM_MemcpyD2D));
  common(benchmark::RegisterBenchmark("BM_Encode", BM_Encode)->DenseRange(0, last));
  common(benchmark::RegisterBenchmark("BM_Decode", BM_Decode)->DenseRange(0, last));
  // Decode-add of the codecs the compressed all-reduce gathers (sign, top-k) and of int8/int4.
  common(benchmark::RegisterBenchmark("BM_DecodeAdd", BM_DecodeAdd)->Arg(2)->Arg(4)->Arg(6)->Arg(7)->Arg(8));
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  size_t encBytes = 0;
  for (const Case& c : cases()) encBytes = std::max(encBytes, encodedBytes(c.config, kCount));
  const std::string why = setUp(encBytes);
  if (!why.empty()) {
    std::printf("skipped: no usable CUDA device: %s\n", why.c_str());
    tearDown();
    return 0;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) {
    benchmark::AddCustomContext("cuda_device", prop.name);
    benchmark::AddCustomContext("cuda_sm", std::to_string(prop.major) + "." + std::to_string(prop.minor) + ", " +
                                               std::to_string(prop.multiProcessorCount) + " SMs");
  }
  benchmark::AddCustomContext("bytes_per_call", std::to_string(kBytes) + " (float32 input)");
  registerAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  tearDown();
  return 0;
}
