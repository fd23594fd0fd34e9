// reduceToTwo (common/reduce_to_two.h): both destinations hold, byte for byte (NaNs aside: a
// sum of two NaNs keeps the payload of whichever operand the compiled loop puts first), what
// reduceBuffers makes of the same inputs (reduce_test checks reduceBuffers against a reference
// in double), with and without streaming stores, on every instruction set of the kernels, for
// counts around its line and tile, destinations that share their offset within a line (the
// line-by-line kernel) or not (the tiles), and destinations that are the sources (the direct
// all-reduce in place).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "common/dtype.h"
#include "common/numeric.h"
#include "common/reduce_to_two.h"

namespace weft {
namespace {

const ncclDataType_t kTypes[] = {ncclInt8,    ncclUint32,  ncclInt64,    ncclFloat16,
                                 ncclFloat32, ncclFloat64, ncclBfloat16, ncclFloat8e4m3};
const ReduceOp kOps[] = {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min};
// Around the 1 KiB tile for 1-, 4- and 8-byte types, and one large count.
const size_t kCounts[] = {0, 1, 15, 16, 17, 127, 128, 129, 255, 256, 257, 1023, 1024, 1025, 30011};

std::vector<unsigned char> randomBytes(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<unsigned char> bytes(n);
  for (auto& b : bytes) b = static_cast<unsigned char>(gen());
  return bytes;
}

// 64-byte aligned storage, filled with `fill`, with room for `bytes` at any offset below 128.
struct AlignedBytes {
  AlignedBytes(size_t bytes, unsigned char fill) : storage(bytes + 256, fill) {}
  unsigned char* base() {
    auto at = reinterpret_cast<uintptr_t>(storage.data());
    return storage.data() + ((64 - at % 64) % 64);
  }
  std::vector<unsigned char> storage;
};

// Equal bytes, or both NaN.
bool sameElements(const unsigned char* actual, const std::vector<unsigned char>& want, ncclDataType_t type) {
  const size_t size = dataTypeSize(type);
  for (size_t at = 0; at < want.size(); at += size) {
    if (std::memcmp(actual + at, &want[at], size) == 0) continue;
    if (!isFloatingType(type) || !std::isnan(toDouble(actual + at, type)) || !std::isnan(toDouble(&want[at], type)))
      return false;
  }
  return true;
}

class ReduceToTwoTest : public ::testing::TestWithParam<KernelIsa> {
 protected:
  void SetUp() override {
    saved_ = kernelIsa();
    if (!setKernelIsa(GetParam()))
      GTEST_SKIP() << "this CPU cannot run the " << kernelIsaName(GetParam()) << " kernels";
  }
  void TearDown() override { setKernelIsa(saved_); }
  KernelIsa saved_ = KernelIsa::Portable;
};

TEST_P(ReduceToTwoTest, BothDestinationsMatchReduceBuffers) {
  unsigned seed = 1;
  // Byte offsets of the two destinations from a 64-byte boundary: the same line offset (0 and
  // 64: whole lines from the start; 4 and 68: a head first) or not (0 and 32, 8 and 0).
  const std::pair<size_t, size_t> kOffsets[] = {{0, 64}, {4, 68}, {0, 32}, {8, 0}};
  for (ncclDataType_t type : kTypes)
    for (ReduceOp op : kOps)
      for (size_t count : kCounts)
        for (bool streaming : {false, true})
          for (auto [offset, offset2] : kOffsets) {
            const size_t size = dataTypeSize(type);
            if (offset % size || offset2 % size) continue;  // elements stay aligned to their size
            const size_t bytes = count * size;
            auto a = randomBytes(bytes, ++seed);
            auto b = randomBytes(bytes, ++seed);
            std::vector<unsigned char> want(bytes);
            reduceBuffers(want.data(), a.data(), b.data(), count, type, op);
            AlignedBytes dst(bytes, 0xA5), dst2(bytes, 0x5A);
            unsigned char* d = dst.base() + offset;
            unsigned char* d2 = dst2.base() + offset2;
            reduceToTwo(d, d2, a.data(), b.data(), count, type, op, streaming);
            ASSERT_TRUE(sameElements(d, want, type))
                << dataTypeName(type) << " count " << count << " offsets " << offset << "/" << offset2;
            ASSERT_TRUE(sameElements(d2, want, type))
                << dataTypeName(type) << " count " << count << " offsets " << offset << "/" << offset2;
            // Nothing outside the destinations is written.
            for (const auto& [buffer, start, fill] : {std::tuple{&dst, d, 0xA5}, std::tuple{&dst2, d2, 0x5A}}) {
              const unsigned char* first = buffer->storage.data();
              const unsigned char* last = first + buffer->storage.size();
              for (const unsigned char* p = first; p < start; ++p) ASSERT_EQ(*p, fill);
              for (const unsigned char* p = start + bytes; p < last; ++p) ASSERT_EQ(*p, fill);
            }
          }
}

TEST_P(ReduceToTwoTest, DestinationsMayBeTheSources) {
  // In place on both ranks: the result goes over both inputs (dst = a, dst2 = b).
  for (bool streaming : {false, true})
    for (size_t count : {size_t(257), size_t(300007)}) {
      auto a = randomBytes(count * 4, 7);
      auto b = randomBytes(count * 4, 8);
      std::vector<unsigned char> want(count * 4);
      reduceBuffers(want.data(), a.data(), b.data(), count, ncclFloat32, ReduceOp::Max);
      reduceToTwo(a.data(), b.data(), a.data(), b.data(), count, ncclFloat32, ReduceOp::Max, streaming);
      EXPECT_EQ(memcmp(a.data(), want.data(), want.size()), 0) << count << (streaming ? " streaming" : "");
      EXPECT_EQ(memcmp(b.data(), want.data(), want.size()), 0) << count << (streaming ? " streaming" : "");
    }
}

INSTANTIATE_TEST_SUITE_P(EveryIsa, ReduceToTwoTest,
                         ::testing::Values(KernelIsa::Portable, KernelIsa::Avx2, KernelIsa::Avx512),
                         [](const ::testing::TestParamInfo<KernelIsa>& info) { return kernelIsaName(info.param); });

}  // namespace
}  // namespace weft
