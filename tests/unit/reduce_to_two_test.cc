// reduceToTwo (common/reduce_to_two.h): both destinations hold, byte for byte, what
// reduceBuffers makes of the same inputs (reduce_test checks reduceBuffers against a reference
// in double), with and without streaming stores, for counts around its tile, misaligned
// destinations, and destinations that are the sources (the direct all-reduce in place).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "common/dtype.h"
#include "common/reduce_to_two.h"

namespace weft {
namespace {

const ncclDataType_t kTypes[] = {ncclInt8,    ncclUint32,  ncclInt64,    ncclFloat16,
                                 ncclFloat32, ncclFloat64, ncclBfloat16, ncclFloat8e4m3};
const ReduceOp kOps[] = {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min};
// Around the 1 KiB tile for 1-, 4- and 8-byte types, and one large count.
const size_t kCounts[] = {0, 1, 127, 128, 129, 255, 256, 257, 1023, 1024, 1025, 300007};

std::vector<unsigned char> randomBytes(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<unsigned char> bytes(n);
  for (auto& b : bytes) b = static_cast<unsigned char>(gen());
  return bytes;
}

TEST(ReduceToTwo, BothDestinationsMatchReduceBuffers) {
  unsigned seed = 1;
  for (ncclDataType_t type : kTypes)
    for (ReduceOp op : kOps)
      for (size_t count : kCounts)
        for (bool streaming : {false, true})
          for (size_t shift : {size_t(0), size_t(1)}) {  // destinations one element off alignment
            const size_t size = dataTypeSize(type);
            const size_t bytes = count * size;
            auto a = randomBytes(bytes, ++seed);
            auto b = randomBytes(bytes, ++seed);
            std::vector<unsigned char> want(bytes);
            reduceBuffers(want.data(), a.data(), b.data(), count, type, op);
            std::vector<unsigned char> dst(bytes + 64, 0xA5), dst2(bytes + 64, 0x5A);
            unsigned char* d = dst.data() + shift * size;
            unsigned char* d2 = dst2.data() + 32 + shift * size;
            reduceToTwo(d, d2, a.data(), b.data(), count, type, op, streaming);
            ASSERT_TRUE(std::equal(want.begin(), want.end(), d)) << dataTypeName(type) << " count " << count;
            ASSERT_TRUE(std::equal(want.begin(), want.end(), d2)) << dataTypeName(type) << " count " << count;
            // Nothing outside the destinations is written.
            for (size_t i = 0; i < shift * size; ++i) ASSERT_EQ(dst[i], 0xA5);
            for (size_t i = shift * size + bytes; i < dst.size(); ++i) ASSERT_EQ(dst[i], 0xA5);
            for (size_t i = 0; i < 32 + shift * size; ++i) ASSERT_EQ(dst2[i], 0x5A);
            for (size_t i = 32 + shift * size + bytes; i < dst2.size(); ++i) ASSERT_EQ(dst2[i], 0x5A);
          }
}

TEST(ReduceToTwo, DestinationsMayBeTheSources) {
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

}  // namespace
}  // namespace weft
