// NCCL_IB_HCA's syntax, as NCCL documents it: prefixes by default, "=" exact names, "^"
// exclusion, ":port" per entry; a malformed port is an error naming the variable.
#include <gtest/gtest.h>

#include "common/status.h"
#include "transport/ibverbs/ib_device_filter.h"

namespace weft {
namespace {

IbDeviceFilter parsed(const char* text) {
  IbDeviceFilter filter;
  EXPECT_EQ(IbDeviceFilter::parse(text, &filter), ncclSuccess) << lastErrorMessage();
  return filter;
}

TEST(IbDeviceFilter, EmptyAllowsEverything) {
  EXPECT_TRUE(parsed("").allows("mlx5_0", 1));
  EXPECT_TRUE(parsed("").allows("rxe0", 2));
}

TEST(IbDeviceFilter, PrefixesByDefault) {
  const IbDeviceFilter f = parsed("mlx5");
  EXPECT_TRUE(f.allows("mlx5_0", 1));
  EXPECT_TRUE(f.allows("mlx5_10", 2));
  EXPECT_FALSE(f.allows("rxe0", 1));
}

TEST(IbDeviceFilter, PortsNarrowAnEntry) {
  const IbDeviceFilter f = parsed("mlx5_0:1,mlx5_1");
  EXPECT_TRUE(f.allows("mlx5_0", 1));
  EXPECT_FALSE(f.allows("mlx5_0", 2));
  EXPECT_TRUE(f.allows("mlx5_1", 2));
  EXPECT_FALSE(f.allows("mlx5_2", 1));
}

TEST(IbDeviceFilter, EqualsMatchesExactNames) {
  const IbDeviceFilter f = parsed("=mlx5_1");
  EXPECT_TRUE(f.allows("mlx5_1", 1));
  EXPECT_FALSE(f.allows("mlx5_10", 1));
}

TEST(IbDeviceFilter, CaretExcludes) {
  const IbDeviceFilter f = parsed("^mlx5_1");
  EXPECT_TRUE(f.allows("mlx5_0", 1));
  EXPECT_FALSE(f.allows("mlx5_1", 1));
  EXPECT_FALSE(f.allows("mlx5_10", 1)) << "a prefix";
  const IbDeviceFilter exact = parsed("^=mlx5_1:2");
  EXPECT_TRUE(exact.allows("mlx5_10", 2));
  EXPECT_TRUE(exact.allows("mlx5_1", 1));
  EXPECT_FALSE(exact.allows("mlx5_1", 2));
}

TEST(IbDeviceFilter, MalformedPortIsAnErrorNamingTheVariable) {
  IbDeviceFilter filter;
  EXPECT_EQ(IbDeviceFilter::parse("mlx5_0:one", &filter), ncclInvalidArgument);
  EXPECT_NE(lastErrorMessage().find("NCCL_IB_HCA=mlx5_0:one"), std::string::npos) << lastErrorMessage();
  EXPECT_EQ(IbDeviceFilter::parse("mlx5_0:0", &filter), ncclInvalidArgument);
}

}  // namespace
}  // namespace weft
