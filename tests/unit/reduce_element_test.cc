// The element functions that the CUDA reduction kernels apply (common/reduce_element.h), run
// here on the host, give the bytes of the CPU kernels (reduceBuffers, scaleBuffer,
// divideBuffer, on the best instruction set this CPU has) for every type, operator and divisor
// (NaN for NaN: see sameElement).
// The kernels compile the same functions for the device, so this checks their arithmetic on
// every commit; tests/gpu/reduce_cuda_test.cc checks the kernels themselves on a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/dtype.h"
#include "common/reduce.h"
#include "common/reduce_element.h"
#include "tests/support/same_element.h"

namespace weft {
namespace {

using namespace elementwise;
using weft::testing::sameElement;

constexpr size_t kCount = 4099;  // not a multiple of any vector width: the CPU tails run too

// Random bytes (every bit pattern: NaNs, infinities, subnormals and extremes of the narrow types)
// followed by values chosen to round, saturate and divide at the edges.
std::vector<unsigned char> elements(ncclDataType_t type, uint64_t seed) {
  const size_t size = dataTypeSize(type);
  std::vector<unsigned char> bytes(kCount * size);
  std::mt19937_64 rng(seed);
  for (unsigned char& b : bytes) b = static_cast<unsigned char>(rng());
  const uint64_t edges[] = {0, 1, ~uint64_t{0}, uint64_t{1} << (size * 8 - 1), (uint64_t{1} << (size * 8 - 1)) - 1};
  for (size_t i = 0; i < std::size(edges); ++i) std::memcpy(&bytes[i * size], &edges[i], size);
  return bytes;
}

template <class Fn, size_t... I>
void forType(ncclDataType_t type, Fn&& fn, std::index_sequence<I...>) {
  ((type == static_cast<ncclDataType_t>(I) ? fn(std::tuple_element_t<I, Codecs>{}) : void()), ...);
}
// Calls fn(Codec{}) with the codec of `type`.
template <class Fn>
void forType(ncclDataType_t type, Fn&& fn) {
  forType(type, fn, std::make_index_sequence<ncclNumTypes>());
}

std::string where(ncclDataType_t type, size_t i) {
  return std::string(dataTypeName(type)) + ", element " + std::to_string(i);
}

class ReduceElement : public ::testing::TestWithParam<int> {
 protected:
  ncclDataType_t type() const { return static_cast<ncclDataType_t>(GetParam()); }
};

TEST_P(ReduceElement, EveryOperatorGivesTheCpuKernelsBytes) {
  const ncclDataType_t t = type();
  const size_t size = dataTypeSize(t);
  const std::vector<unsigned char> a = elements(t, 1), b = elements(t, 2);
  const ReduceOp ops[] = {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min};
  for (ReduceOp op : ops) {
    std::vector<unsigned char> cpu(a.size()), element(a.size());
    reduceBuffers(cpu.data(), a.data(), b.data(), kCount, t, op);
    forType(t, [&](auto codec) {
      using C = decltype(codec);
      using S = typename C::Storage;
      for (size_t i = 0; i < kCount; ++i) {
        S x, y, r{};
        std::memcpy(&x, &a[i * size], size);
        std::memcpy(&y, &b[i * size], size);
        switch (op) {
          case ReduceOp::Sum: r = reduceElement<C, SumOp>(x, y); break;
          case ReduceOp::Prod: r = reduceElement<C, ProdOp>(x, y); break;
          case ReduceOp::Max: r = reduceElement<C, MaxOp>(x, y); break;
          case ReduceOp::Min: r = reduceElement<C, MinOp>(x, y); break;
        }
        std::memcpy(&element[i * size], &r, size);
      }
    });
    for (size_t i = 0; i < kCount; ++i)
      ASSERT_TRUE(sameElement(&cpu[i * size], &element[i * size], t)) << where(t, i) << ", op " << static_cast<int>(op);
  }
}

TEST_P(ReduceElement, DivisionGivesTheCpuKernelsBytes) {
  const ncclDataType_t t = type();
  const size_t size = dataTypeSize(t);
  const std::vector<unsigned char> a = elements(t, 3);
  const uint64_t divisors[] = {1, 2, 3, 7, 1000, (1ull << 31) + 1, (1ull << 32) + 5, INT64_MAX, 1ull << 63, ~0ull};
  for (uint64_t divisor : divisors) {
    std::vector<unsigned char> cpu(a.size()), element(a.size());
    divideBuffer(cpu.data(), a.data(), kCount, t, divisor);
    forType(t, [&](auto codec) {
      using C = decltype(codec);
      using S = typename C::Storage;
      for (size_t i = 0; i < kCount; ++i) {
        S x;
        std::memcpy(&x, &a[i * size], size);
        const S r = divideElement<C>(x, divisor);
        std::memcpy(&element[i * size], &r, size);
      }
    });
    for (size_t i = 0; i < kCount; ++i)
      ASSERT_TRUE(sameElement(&cpu[i * size], &element[i * size], t)) << where(t, i) << ", divisor " << divisor;
  }
}

TEST_P(ReduceElement, ScalingGivesTheCpuKernelsBytes) {
  const ncclDataType_t t = type();
  const size_t size = dataTypeSize(t);
  const std::vector<unsigned char> a = elements(t, 4), scalars = elements(t, 5);
  for (size_t s = 0; s < 8; ++s) {
    const unsigned char* scalar = &scalars[s * size];
    std::vector<unsigned char> cpu(a.size()), element(a.size());
    scaleBuffer(cpu.data(), a.data(), kCount, t, scalar);
    forType(t, [&](auto codec) {
      using C = decltype(codec);
      using S = typename C::Storage;
      S factor;
      std::memcpy(&factor, scalar, size);
      for (size_t i = 0; i < kCount; ++i) {
        S x;
        std::memcpy(&x, &a[i * size], size);
        const S r = scaleElement<C>(x, C::load(factor));  // as cuda/reduce.cu's Scale functor
        std::memcpy(&element[i * size], &r, size);
      }
    });
    for (size_t i = 0; i < kCount; ++i)
      ASSERT_TRUE(sameElement(&cpu[i * size], &element[i * size], t)) << where(t, i) << ", scalar " << s;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryType, ReduceElement, ::testing::Range(0, static_cast<int>(ncclNumTypes)),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::string(dataTypeName(static_cast<ncclDataType_t>(info.param)));
                         });

}  // namespace
}  // namespace weft
