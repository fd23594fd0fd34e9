// Codec throughput on one core: GB/s of float32 input (64 MiB) for each encode and decode,
// beside memcpy and a read-only pass measured in the same run; top-k of 1% of its 16M floats
// (exact and approximate) beside std::nth_element. Buffers are allocated and pre-faulted
// outside the timed loops.
//
//   bench_compression --benchmark_min_time=0.5
//   WEFT_KERNEL_ISA=avx2|portable caps the kernels' instruction set.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "compression/codec.h"
#include "compression/cpu/simd.h"
#include "compression/topk.h"

namespace {

using namespace weft::compression;

constexpr size_t kBytes = 64ull << 20;
constexpr size_t kCount = kBytes / sizeof(float);

// Vectors are value-initialized, which touches (pre-faults) every page.
const std::vector<float>& gradient() {
  static const std::vector<float> data = [] {
    std::vector<float> v(kCount);
    std::mt19937 gen(1);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& x : v) x = normal(gen);
    return v;
  }();
  return data;
}

void BM_Memcpy(benchmark::State& state) {
  const auto& src = gradient();
  std::vector<float> dst(kCount);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), kBytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kBytes);
}
BENCHMARK(BM_Memcpy)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ReadPass(benchmark::State& state) {
  const auto& src = gradient();
  for (auto _ : state) {
    uint32_t acc = 0;
    const uint32_t* p = reinterpret_cast<const uint32_t*>(src.data());
    for (size_t i = 0; i < kCount; ++i) acc |= p[i];
    benchmark::DoNotOptimize(acc);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kBytes);
}
BENCHMARK(BM_ReadPass)->Unit(benchmark::kMillisecond)->UseRealTime();

CodecConfig configFor(int which) {
  CodecConfig c;
  switch (which) {
    case 0: c.kind = CodecKind::kFp16; break;
    case 1: c.kind = CodecKind::kBf16; break;
    case 2: c.kind = CodecKind::kInt8; break;
    case 3:
      c.kind = CodecKind::kInt8;
      c.rounding = Rounding::kStochastic;
      break;
    case 4: c.kind = CodecKind::kInt4; break;
    case 5:
      c.kind = CodecKind::kInt4;
      c.rounding = Rounding::kStochastic;
      break;
    case 6: c.kind = CodecKind::kSign; break;
  }
  return c;
}
const char* labelFor(int which) {
  static const char* names[] = {"fp16", "bf16", "int8_rtn", "int8_sr", "int4_rtn", "int4_sr", "sign"};
  return names[which];
}

void BM_Encode(benchmark::State& state) {
  const int which = static_cast<int>(state.range(0));
  std::unique_ptr<Codec> codec;
  Codec::create(configFor(which), kCount, &codec);
  const auto& src = gradient();
  std::vector<uint8_t> enc(codec->encodedBytes(kCount), 1);
  uint64_t seed = 0;
  for (auto _ : state) {
    codec->encode(src.data(), ncclFloat32, kCount, enc.data(), EncodeContext{++seed, 0});
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kBytes);
  state.SetLabel(std::string(labelFor(which)) + " " + isaName(activeIsa()));
}
BENCHMARK(BM_Encode)->DenseRange(0, 6)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Decode(benchmark::State& state) {
  const int which = static_cast<int>(state.range(0));
  std::unique_ptr<Codec> codec;
  Codec::create(configFor(which), kCount, &codec);
  std::vector<uint8_t> enc(codec->encodedBytes(kCount));
  codec->encode(gradient().data(), ncclFloat32, kCount, enc.data(), {});
  std::vector<float> out(kCount);
  for (auto _ : state) {
    codec->decode(enc.data(), kCount, out.data(), ncclFloat32);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kBytes);
  state.SetLabel(std::string(labelFor(which)) + " " + isaName(activeIsa()));
}
BENCHMARK(BM_Decode)->DenseRange(0, 6)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_DecodeAdd(benchmark::State& state) {
  const int which = static_cast<int>(state.range(0));
  std::unique_ptr<Codec> codec;
  Codec::create(configFor(which), kCount, &codec);
  std::vector<uint8_t> enc(codec->encodedBytes(kCount));
  codec->encode(gradient().data(), ncclFloat32, kCount, enc.data(), {});
  std::vector<float> acc(kCount);
  for (auto _ : state) {
    codec->decodeAdd(enc.data(), kCount, acc.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kBytes);
  state.SetLabel(std::string(labelFor(which)) + " " + isaName(activeIsa()));
}
BENCHMARK(BM_DecodeAdd)->Arg(2)->Arg(4)->Arg(6)->Unit(benchmark::kMillisecond)->UseRealTime();

// ---- top-k of 1% of 16M floats ----

constexpr size_t kTopK = kCount / 100;

void BM_TopKExact(benchmark::State& state) {
  TopKSelector sel(kCount, kTopK, 65536);
  std::vector<uint32_t> idx(kTopK);
  std::vector<float> val(kTopK);
  for (auto _ : state) {
    benchmark::DoNotOptimize(sel.exact(gradient().data(), kCount, kTopK, idx.data(), val.data()));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kBytes);
}
BENCHMARK(BM_TopKExact)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_TopKApprox(benchmark::State& state) {
  TopKSelector sel(kCount, kTopK, 65536);
  std::vector<uint32_t> idx(kTopK);
  std::vector<float> val(kTopK);
  uint64_t seed = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(sel.approximate(gradient().data(), kCount, kTopK, 1.25, ++seed, idx.data(), val.data()));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kBytes);
}
BENCHMARK(BM_TopKApprox)->Unit(benchmark::kMillisecond)->UseRealTime();

// std::nth_element on the magnitudes (the copy into the scratch array is not timed).
void BM_NthElement(benchmark::State& state) {
  std::vector<uint32_t> keys(kCount);
  for (auto _ : state) {
    state.PauseTiming();
    const float* x = gradient().data();
    for (size_t i = 0; i < kCount; ++i) keys[i] = std::bit_cast<uint32_t>(x[i]) & 0x7fffffffu;
    state.ResumeTiming();
    std::nth_element(keys.begin(), keys.begin() + (kTopK - 1), keys.end(), std::greater<uint32_t>());
    benchmark::DoNotOptimize(keys[kTopK - 1]);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kBytes);
}
BENCHMARK(BM_NthElement)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
