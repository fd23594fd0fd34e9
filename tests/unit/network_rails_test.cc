// TCP rails (runtime/comm/network_rails.h): the order NICs become rails in, and which of a
// peer's listeners a rank joins.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/comm/network_rails.h"

using namespace weft;

namespace {

TEST(NetworkRails, NamesSortWithNumbersByValue) {
  std::vector<std::string> names = {"eth10", "eth2", "ib1", "eth0", "eth1", "enp65s0f1", "enp65s0f0", "enp9s0f0"};
  std::sort(names.begin(), names.end(), railNameBefore);
  EXPECT_EQ(names,
            (std::vector<std::string>{"enp9s0f0", "enp65s0f0", "enp65s0f1", "eth0", "eth1", "eth2", "eth10", "ib1"}));
  EXPECT_FALSE(railNameBefore("eth1", "eth1"));
  EXPECT_TRUE(railNameBefore("eth", "eth0"));
}

SocketAddress addressOf(const char* text) {
  SocketAddress address;
  EXPECT_EQ(parseSocketAddress(text, "test", &address), ncclSuccess);
  return address;
}

TEST(NetworkRails, PeerIsJoinedThroughTheRailOfItsLocalRank) {
  RankInfo peer{};
  const SocketAddress data = addressOf("198.18.1.2:4000");
  peer.dataAddressLength = data.length;
  memcpy(&peer.dataAddress, &data.storage, sizeof(peer.dataAddress));
  int rail = 7;
  // No rails: its one data address.
  EXPECT_EQ(joinAddressOf(peer, 3, &rail).toString(), "198.18.1.2:4000");
  EXPECT_EQ(rail, -1);
  publishRails({addressOf("198.18.1.2:4000"), addressOf("198.18.2.2:4001"), addressOf("198.18.3.2:4002")}, &peer);
  ASSERT_EQ(peer.railCount, 3u);
  const char* expected[] = {"198.18.1.2:4000", "198.18.2.2:4001", "198.18.3.2:4002", "198.18.1.2:4000",
                            "198.18.2.2:4001"};
  for (int local = 0; local < 5; ++local) {
    EXPECT_EQ(joinAddressOf(peer, local, &rail).toString(), expected[local]) << "local rank " << local;
    EXPECT_EQ(rail, local % 3);
  }
  // A peer the layout does not place: its data address.
  EXPECT_EQ(joinAddressOf(peer, -1, &rail).toString(), "198.18.1.2:4000");
  EXPECT_EQ(rail, -1);
}

TEST(NetworkRails, TwoOrMoreInterfacesBecomeRailsInNameOrderAtMostEight) {
  EXPECT_TRUE(railsAmong({}).empty());
  EXPECT_TRUE(railsAmong({{addressOf("198.18.1.1"), "eth0"}}).empty()) << "one interface is no rails";
  std::vector<NamedAddress> interfaces;
  for (int k = 9; k >= 0; --k)
    interfaces.push_back({addressOf(("198.18." + std::to_string(k + 1) + ".1").c_str()), "eth" + std::to_string(k)});
  const std::vector<NamedAddress> rails = railsAmong(interfaces);
  ASSERT_EQ(rails.size(), 8u);
  for (size_t k = 0; k < rails.size(); ++k) {
    EXPECT_EQ(rails[k].interfaceName, "eth" + std::to_string(k));
    EXPECT_EQ(rails[k].address.hostString(), "198.18." + std::to_string(k + 1) + ".1");
  }
}

TEST(NetworkRails, DescribedWithoutPorts) {
  std::vector<NamedAddress> rails = {{addressOf("198.18.1.1:5000"), "eth0"}, {addressOf("198.18.2.1"), "eth1"}};
  EXPECT_EQ(describeRails(rails), "eth0 198.18.1.1, eth1 198.18.2.1");
}

}  // namespace
