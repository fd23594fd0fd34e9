// The rank layout (nodes, local ranks, GPU sharing, ring order, rails) from placements as if
// gathered by the bootstrap from several hosts, and the placement record's wire encoding.
//
// The multi-process version (ranks in two fake hosts through WEFT_HOSTNAME, layout computed by
// the runtime's bootstrap) belongs with the runtime's integration tests.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <sstream>

#include "common/status.h"
#include "topology/topology_xml.h"
#include "topology_test_util.h"

namespace weft {
namespace {

using testing::fixturePath;

std::vector<RankPlacement> readRanks(const std::string& path) {
  std::vector<RankPlacement> out;
  std::istringstream in(testing::readFile(path));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream f(line);
    int rank;
    RankPlacement p;
    f >> rank >> p.hostId >> p.numaNode >> p.cpuset >> p.gpuIndex >> p.gpuBusId >> p.nicName;
    if (!f) continue;
    if (rank >= static_cast<int>(out.size())) out.resize(rank + 1);
    out[rank] = p;
  }
  return out;
}

TEST(RankLayout, TwoHostFixture) {
  std::vector<RankPlacement> ranks = readRanks(fixturePath("two_hosts.ranks"));
  ASSERT_EQ(ranks.size(), 8u);
  std::map<std::string, std::string> got;
  RankLayout L = computeRankLayout(ranks);
  testing::layoutAnswers(L, ranks, "", &got);
  for (const auto& [key, value] : testing::readExpect(fixturePath("two_hosts.expect"))) {
    ASSERT_TRUE(got.count(key)) << key;
    EXPECT_EQ(got[key], value) << key;
  }
  EXPECT_TRUE(L.uniformLocalSize);
  EXPECT_EQ(describeRankLayout(L), "2 nodes x 4 ranks; ring 0 2 4 6 1 3 5 7");
}

// Ranks gathered over the wire: encode each, decode, lay out.
TEST(RankLayout, TwoFakeHostsThroughTheWireEncoding) {
  TopologyModel m;
  ASSERT_EQ(loadTopologyFile(fixturePath("dgx_h100.xml"), &m), ncclSuccess) << lastErrorMessage();
  std::vector<RankPlacement> sent = testing::twoFakeHosts(m, 0), received;
  for (const RankPlacement& p : sent) {
    std::vector<uint8_t> bytes = encodeRankPlacement(p);
    RankPlacement q;
    ASSERT_EQ(decodeRankPlacement(bytes.data(), bytes.size(), &q), ncclSuccess) << lastErrorMessage();
    received.push_back(q);
  }
  EXPECT_EQ(received, sent);
  RankLayout L = computeRankLayout(received);
  EXPECT_EQ(L.nNodes(), 2);
  EXPECT_EQ(L.nodeHosts, (std::vector<std::string>{"fake-host-0", "fake-host-1"}));
  EXPECT_EQ(received[4].gpuBusId, "0000:33:00.0");
  EXPECT_EQ(received[4].nicName, "mlx5_2");
  EXPECT_DOUBLE_EQ(received[4].nicSpeedGbps, 400);
}

// Properties for many shapes: each node's ranks are adjacent in the ring, the ring crosses each
// node boundary exactly once, rails take one rank per node.
TEST(RankLayout, RingAndRailPropertiesForRandomLayouts) {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 200; ++trial) {
    int nHosts = 1 + static_cast<int>(rng() % 6);
    int nRanks = nHosts + static_cast<int>(rng() % 20);
    std::vector<RankPlacement> ranks(nRanks);
    for (int r = 0; r < nRanks; ++r) {
      int host = r < nHosts ? r : static_cast<int>(rng() % nHosts);
      ranks[r].hostId = "h" + std::to_string(host);
      ranks[r].gpuIndex = static_cast<int>(rng() % 3) - 1;
    }
    RankLayout L = computeRankLayout(ranks);
    ASSERT_EQ(L.nNodes(), nHosts);
    ASSERT_EQ(static_cast<int>(L.ringOrder.size()), nRanks);
    std::vector<int> seen(nRanks, 0);
    int crossings = 0;
    for (int i = 0; i < nRanks; ++i) {
      int a = L.ringOrder[i], b = L.ringOrder[(i + 1) % nRanks];
      ++seen[a];
      if (L.nodeOf[a] != L.nodeOf[b]) ++crossings;
    }
    for (int s : seen) ASSERT_EQ(s, 1);
    ASSERT_EQ(crossings, nHosts == 1 ? 0 : nHosts);
    int railMembers = 0;
    for (size_t l = 0; l < L.rails.size(); ++l) {
      std::set<int> nodes;
      for (int r : L.rails[l]) {
        ASSERT_EQ(L.localRank[r], static_cast<int>(l));
        ASSERT_TRUE(nodes.insert(L.nodeOf[r]).second);
      }
      railMembers += static_cast<int>(L.rails[l].size());
    }
    ASSERT_EQ(railMembers, nRanks);
    for (int r = 0; r < nRanks; ++r) {
      ASSERT_EQ(L.localSize[r], static_cast<int>(L.nodes[L.nodeOf[r]].size()));
      ASSERT_EQ(L.nodes[L.nodeOf[r]][L.localRank[r]], r);
      if (ranks[r].gpuIndex < 0) {
        ASSERT_TRUE(L.ranksSharingGpu[r].empty());
      }
      for (int s : L.ranksSharingGpu[r]) {
        ASSERT_EQ(ranks[s].hostId, ranks[r].hostId);
        ASSERT_EQ(ranks[s].gpuIndex, ranks[r].gpuIndex);
      }
    }
  }
}

TEST(RankLayout, UnevenNodesAndEdgeCases) {
  std::vector<RankPlacement> ranks(5);
  const char* hosts[] = {"a", "a", "b", "a", "b"};
  for (int r = 0; r < 5; ++r) ranks[r].hostId = hosts[r];
  RankLayout L = computeRankLayout(ranks);
  EXPECT_FALSE(L.uniformLocalSize);
  EXPECT_EQ(L.ringOrder, (std::vector<int>{0, 1, 3, 2, 4}));
  EXPECT_EQ(L.rails.size(), 3u);
  EXPECT_EQ(L.rails[2], (std::vector<int>{3}));
  EXPECT_EQ(describeRankLayout(L), "2 nodes (3+2 ranks); ring 0 1 3 2 4");
  EXPECT_EQ(computeRankLayout({}).nNodes(), 0);
  // Same GPU index on different hosts is not sharing.
  std::vector<RankPlacement> two(2);
  two[0].hostId = "x";
  two[1].hostId = "y";
  two[0].gpuIndex = two[1].gpuIndex = 0;
  RankLayout T = computeRankLayout(two);
  EXPECT_EQ(T.ranksSharingGpu[0], (std::vector<int>{0}));
}

TEST(RankPlacementCodec, RoundTripsAndRejectsEveryTruncation) {
  RankPlacement p;
  p.hostId = "node17:5f1c";
  p.numaNode = 1;
  p.cpuset = "0x00ff0000";
  p.gpuIndex = 3;
  p.gpuBusId = "0000:43:00.0";
  p.nicName = "mlx5_3";
  p.nicSpeedGbps = 400;
  p.pid = 4242;
  std::vector<uint8_t> bytes = encodeRankPlacement(p);
  RankPlacement q;
  ASSERT_EQ(decodeRankPlacement(bytes.data(), bytes.size(), &q), ncclSuccess);
  EXPECT_EQ(q, p);
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_EQ(decodeRankPlacement(bytes.data(), n, &q), ncclInvalidArgument) << n;
    EXPECT_NE(lastErrorMessage().find("rank placement record"), std::string::npos);
  }
  std::vector<uint8_t> longer = bytes;
  longer.push_back(0);
  EXPECT_EQ(decodeRankPlacement(longer.data(), longer.size(), &q), ncclInvalidArgument);
  EXPECT_NE(lastErrorMessage().find("unexpected bytes"), std::string::npos);
  std::vector<uint8_t> huge = bytes;
  huge[4] = huge[5] = huge[6] = huge[7] = 0xff;  // hostId length 4 GiB
  EXPECT_EQ(decodeRankPlacement(huge.data(), huge.size(), &q), ncclInvalidArgument);
  EXPECT_NE(lastErrorMessage().find("hostId"), std::string::npos);
  EXPECT_EQ(decodeRankPlacement(nullptr, 0, &q), ncclInvalidArgument);
  // Random corruption never crashes.
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::vector<uint8_t> c = bytes;
    c[rng() % c.size()] = static_cast<uint8_t>(rng());
    (void)decodeRankPlacement(c.data(), c.size(), &q);
  }
}

}  // namespace
}  // namespace weft
