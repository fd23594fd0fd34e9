// What the CUDA kernel benchmarks (bench_compression_cuda, bench_reduce_cuda) share: opening
// device 0 with a stream and two events, and the timing: each iteration queues `batch` calls back
// to back on the stream between the events and reports their mean as benchmark's manual time,
// so the GPU never waits for the host between calls, as in a pipeline of chunks.
#pragma once

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

namespace weft::perf {

inline std::string cudaWhy(const char* what, cudaError_t err) {
  return std::string(what) + ": " + cudaGetErrorString(err);
}

struct CudaTiming {
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
};

// Makes device 0 current with its context, and the stream and events. Empty when the device is
// usable, else the reason (the benchmark then prints "skipped: ..." and exits 0).
inline std::string openDevice(CudaTiming* timing) {
  int devices = 0;
  cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess) return cudaWhy("cudaGetDeviceCount", err);
  if (devices == 0) return "no CUDA device present";
  if ((err = cudaSetDevice(0)) != cudaSuccess || (err = cudaFree(nullptr)) != cudaSuccess)
    return cudaWhy("creating a context on device 0", err);
  if ((err = cudaStreamCreateWithFlags(&timing->stream, cudaStreamNonBlocking)) != cudaSuccess ||
      (err = cudaEventCreate(&timing->start)) != cudaSuccess || (err = cudaEventCreate(&timing->stop)) != cudaSuccess)
    return cudaWhy("creating a stream and events", err);
  return "";
}

inline void closeDevice(CudaTiming* timing) {
  if (timing->start) cudaEventDestroy(timing->start);
  if (timing->stop) cudaEventDestroy(timing->stop);
  if (timing->stream) cudaStreamDestroy(timing->stream);
  *timing = CudaTiming{};
}

// `call(n)` (n counts the calls, from 0) queues one call and returns an empty string, else the
// reason, which ends the benchmark through SkipWithError. Two warm-up calls (kernel loading,
// workspaces growing) come first, untimed.
template <typename Call>
void timeCudaBatches(benchmark::State& state, const CudaTiming& timing, int batch, Call&& call) {
  for (int i = 0; i < 2; ++i) {
    std::string why = call(static_cast<uint64_t>(i));
    cudaError_t err = why.empty() ? cudaStreamSynchronize(timing.stream) : cudaSuccess;
    if (err != cudaSuccess) why = cudaWhy("warm-up", err);
    if (!why.empty()) {
      state.SkipWithError(why.c_str());
      return;
    }
  }
  uint64_t calls = 2;
  for (auto _ : state) {
    std::string why;
    cudaEventRecord(timing.start, timing.stream);
    for (int i = 0; i < batch && why.empty(); ++i) why = call(calls++);
    cudaEventRecord(timing.stop, timing.stream);
    cudaError_t err = cudaEventSynchronize(timing.stop);
    float ms = 0;
    if (why.empty() && err == cudaSuccess) err = cudaEventElapsedTime(&ms, timing.start, timing.stop);
    if (why.empty() && err != cudaSuccess) why = cudaWhy("timing", err);
    if (!why.empty()) {
      state.SkipWithError(why.c_str());
      break;
    }
    state.SetIterationTime(ms / 1e3 / batch);
  }
}

}  // namespace weft::perf
