// Every fixture machine loads and gives the answers written in its .expect file; dumping a
// loaded model and loading the dump gives the same dump and the same answers.
#include <gtest/gtest.h>

#include "common/status.h"
#include "topology/topology_print.h"
#include "topology/topology_xml.h"
#include "topology_test_util.h"

namespace weft {
namespace {

using testing::fixturePath;

class FixtureTest : public ::testing::TestWithParam<const char*> {};

TEST_P(FixtureTest, GivesExpectedAnswers) {
  std::string name = GetParam();
  TopologyModel m;
  ASSERT_EQ(loadTopologyFile(fixturePath(name + ".xml"), &m), ncclSuccess) << lastErrorMessage();
  std::map<std::string, std::string> expect = testing::readExpect(fixturePath(name + ".expect"));
  ASSERT_FALSE(expect.empty());
  std::map<std::string, std::string> got = testing::modelAnswers(m);
  for (const auto& [key, value] : expect) {
    auto it = got.find(key);
    ASSERT_NE(it, got.end()) << name << ": the model gives no answer for " << key;
    EXPECT_EQ(it->second, value) << name << ": " << key;
  }
}

TEST_P(FixtureTest, DumpLoadDumpIsStable) {
  std::string name = GetParam();
  TopologyModel first, second, third;
  ASSERT_EQ(loadTopologyFile(fixturePath(name + ".xml"), &first), ncclSuccess) << lastErrorMessage();
  std::string dump1 = testing::tempPath(name + "_1.xml"), dump2 = testing::tempPath(name + "_2.xml");
  ASSERT_EQ(writeTopologyXml(first, dump1), ncclSuccess) << lastErrorMessage();
  ASSERT_EQ(loadTopologyFile(dump1, &second), ncclSuccess) << lastErrorMessage();
  ASSERT_EQ(writeTopologyXml(second, dump2), ncclSuccess) << lastErrorMessage();
  EXPECT_EQ(testing::readFile(dump1), testing::readFile(dump2));
  ASSERT_EQ(loadTopologyFile(dump2, &third), ncclSuccess) << lastErrorMessage();
  // The model itself (everything but where it came from) is the same too.
  second.source = third.source = first.source;
  EXPECT_EQ(topologyToJson(first), topologyToJson(second));
  EXPECT_EQ(topologyToJson(second), topologyToJson(third));
  EXPECT_EQ(testing::modelAnswers(first), testing::modelAnswers(third));
  std::remove(dump1.c_str());
  std::remove(dump2.c_str());
}

TEST_P(FixtureTest, PrintsTreeLinksAndJson) {
  TopologyModel m;
  ASSERT_EQ(loadTopologyFile(fixturePath(std::string(GetParam()) + ".xml"), &m), ncclSuccess);
  std::string tree = formatTopologyTree(m), links = formatLinkTable(m), json = topologyToJson(m);
  EXPECT_NE(tree.find("Machine"), std::string::npos);
  EXPECT_NE(links.find("PCIe"), std::string::npos);
  EXPECT_EQ(json.front(), '{');
  for (const NicInfo& n : m.nics) EXPECT_NE(tree.find(n.name), std::string::npos);
  for (const TopoLink& l : m.links) {
    EXPECT_GT(l.bandwidthGBps, 0);
    EXPECT_GT(l.latencyUs, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Machines, FixtureTest, ::testing::Values("dgx_h100", "workstation_4gpu", "cloud_vm"));

TEST(FixtureLinks, DgxHasTheExpectedLinkClasses) {
  TopologyModel m;
  ASSERT_EQ(loadTopologyFile(fixturePath("dgx_h100.xml"), &m), ncclSuccess);
  std::map<LinkType, int> count;
  for (const TopoLink& l : m.links) ++count[l.type];
  EXPECT_EQ(count[LinkType::NVLink], 8);
  EXPECT_EQ(count[LinkType::Network], 8);
  EXPECT_EQ(count[LinkType::InterSocket], 1);
  for (const TopoLink& l : m.links) {
    if (l.type == LinkType::PCIe && m.nodes[l.a].type == TopoNodeType::Gpu) {
      EXPECT_EQ(l.label, "Gen5 x16");
      EXPECT_NEAR(l.bandwidthGBps, 63.0, 0.1);
      EXPECT_TRUE(l.reported);
    }
    if (l.type == LinkType::Network) {
      EXPECT_DOUBLE_EQ(l.bandwidthGBps, 50.0);  // 400 Gb/s
    }
    if (l.type == LinkType::InterSocket) {
      EXPECT_FALSE(l.reported);  // from the table
    }
  }
  // A GPU on socket 0 and a NIC on socket 1 are SYS apart; the path crosses the socket link.
  const GpuInfo* g0 = m.gpuByIndex(0);
  const NicInfo* n7 = m.nicByName("mlx5_7");
  ASSERT_TRUE(g0 && n7);
  EXPECT_EQ(pathType(m, g0->node, n7->node), PathType::SYS);
  EXPECT_DOUBLE_EQ(pathBandwidthGBps(m, g0->node, n7->node), linkClassInfo(LinkType::InterSocket).nominalGBps);
  // GPU 0's NIC by netdev name works too.
  EXPECT_EQ(m.nicByName("ibp20s0"), m.nicByName("mlx5_0"));
}

TEST(FixtureSynthetic, HwlocSyntheticDescriptionLoads) {
  TopologyModel m;
  ASSERT_EQ(loadTopologyFile("synthetic:pack:2 numa:2 core:4 pu:2", &m), ncclSuccess) << lastErrorMessage();
  EXPECT_EQ(m.packages, 2);
  EXPECT_EQ(m.numaNodes, 4);
  EXPECT_EQ(m.cores, 16);
  EXPECT_EQ(m.pus, 32);
  EXPECT_TRUE(m.gpus.empty());
  EXPECT_TRUE(m.nics.empty());
  // A file holding a synthetic description works too.
  std::string path = testing::tempPath("synthetic.txt");
  testing::writeFile(path, "# a 1-socket box\npack:1 core:2 pu:1\n");
  ASSERT_EQ(loadTopologyFile(path, &m), ncclSuccess) << lastErrorMessage();
  EXPECT_EQ(m.cores, 2);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace weft
