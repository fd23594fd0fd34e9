#include "transport/ucx/ucx_rail_devices.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace weft {
namespace {

// A sysfs tree of its own: eth0 a plain NIC, eth2 a RoCE function with mlx5_2 (port 1), ib0 an
// IPoIB netdev on a dual-port HCA mlx4_0 (ports 1 and 2).
class FakeSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() / ("weft-sysfs-" + std::to_string(getpid()));
    std::filesystem::create_directories(root_ / "class/net/eth0/device");
    std::filesystem::create_directories(root_ / "class/net/eth2/device/infiniband/mlx5_2");
    std::filesystem::create_directories(root_ / "class/infiniband/mlx5_2/ports/1");
    std::filesystem::create_directories(root_ / "class/net/ib0/device/infiniband/mlx4_0");
    std::filesystem::create_directories(root_ / "class/infiniband/mlx4_0/ports/2");
    std::filesystem::create_directories(root_ / "class/infiniband/mlx4_0/ports/1");
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  std::filesystem::path root_;
};

TEST_F(FakeSysfs, PlainNicIsItsNetdevAlone) { EXPECT_EQ(ucxDevicesOfNic("eth0", root_.string()), "eth0"); }

TEST_F(FakeSysfs, RdmaNicAddsItsAdaptersPortsInOrder) {
  EXPECT_EQ(ucxDevicesOfNic("eth2", root_.string()), "eth2,mlx5_2:1");
  EXPECT_EQ(ucxDevicesOfNic("ib0", root_.string()), "ib0,mlx4_0:1,mlx4_0:2");
}

TEST_F(FakeSysfs, UnknownNicIsPassedOnAsNamed) {
  EXPECT_EQ(ucxDevicesOfNic("eth9", root_.string()), "eth9");
  EXPECT_EQ(ucxDevicesOfNic("eth0", (root_ / "missing").string()), "eth0");
}

}  // namespace
}  // namespace weft
