// The simulator's link model (algorithms/simulation/link_model_simulation.h): simulated all-reduce times
// against the closed-form alpha-beta predictions, and NIC contention.
#include <gtest/gtest.h>

#include "algorithms/cost/cost_model.h"
#include "algorithms/simulation/link_model_simulation.h"
#include "tests/unit/topology_test_util.h"
#include "topology/topology_model.h"
#include "topology/topology_xml.h"

using namespace weft;

namespace {

std::vector<std::vector<int>> makeNodes(int n, int perNode) {
  std::vector<std::vector<int>> nodes((n + perNode - 1) / perNode);
  for (int r = 0; r < n; ++r) nodes[r / perNode].push_back(r);
  return nodes;
}

double simulatedUs(Algorithm a, size_t bytes, int n, const std::vector<std::vector<int>>& nodes,
                   const CostModel& model) {
  SimulatedAllReduce r = simulateAllReduceTime(a, bytes, n, nodes, model);
  EXPECT_TRUE(r.ok) << algorithmName(a) << ": " << r.error;
  return r.timeUs;
}

}  // namespace

TEST(LinkModelSimulation, UncontendedMessageCostsAlphaPlusBytesOverBandwidth) {
  CostModel model = costModelFromLinks(LinkTable(), IntraNodeMedium::Memory);
  ContendedLinkModel links(model, makeNodes(4, 2), 4);
  // Same node: intra link; other node: NIC.
  EXPECT_NEAR(links.arrivalTime(0, 1, 1000000, 0.0) * 1e6, model.intra.timeUs(1e6), 1e-6);
  EXPECT_NEAR(links.arrivalTime(0, 2, 1000000, 0.0) * 1e6, model.nic.timeUs(1e6), 1e-6);
  // A second transfer through the same NIC at the same time waits for the first.
  EXPECT_NEAR(links.arrivalTime(1, 3, 1000000, 0.0) * 1e6, model.nic.timeUs(2e6), 1e-6);
  links.reset();
  EXPECT_NEAR(links.arrivalTime(1, 3, 1000000, 0.0) * 1e6, model.nic.timeUs(1e6), 1e-6);
  // The byte scale multiplies every byte count.
  ContendedLinkModel scaled(model, {}, 2, 1000.0);
  EXPECT_NEAR(scaled.transferTime(0, 1, 1000) * 1e6, model.intra.timeUs(1e6), 1e-6);
}

TEST(LinkModelSimulation, LargeMessagesWithinOneAndAHalfOfTheClosedForm) {
  CostModel host = costModelFromLinks(LinkTable(), IntraNodeMedium::Memory);
  TopologyModel dgx;
  ASSERT_EQ(loadTopologyFile(weft::testing::fixturePath("dgx_h100.xml"), &dgx), ncclSuccess);
  CostModel nvlink = costModelFromLinks(linkTableFromTopology(&dgx), IntraNodeMedium::Auto, &dgx);
  struct Case {
    const char* name;
    int n, perNode;
    const CostModel* model;
  } cases[] = {
      {"host 8", 8, 8, &host}, {"host 16", 16, 16, &host}, {"dgx 2x8", 16, 8, &nvlink}, {"dgx 8x8", 64, 8, &nvlink}};
  for (const Case& c : cases)
    for (size_t bytes : {size_t(64) << 20, size_t(1) << 30})
      for (Algorithm a : {Algorithm::Ring, Algorithm::Tree, Algorithm::Rhd}) {
        auto nodes = makeNodes(c.n, c.perNode);
        double predicted = predictAllReduceUs(a, costInputFor(bytes, c.n, nodes), *c.model);
        double simulated = simulatedUs(a, bytes, c.n, nodes, *c.model);
        double ratio = simulated / predicted;
        EXPECT_GE(ratio, 1 / 1.5) << c.name << " " << algorithmName(a) << " " << bytes;
        EXPECT_LE(ratio, 1.5) << c.name << " " << algorithmName(a) << " " << bytes << ": simulated " << simulated
                              << " us, predicted " << predicted << " us";
      }
}

TEST(LinkModelSimulation, ContentionMakesHierarchicalBeatFlatRingAcrossSlowNics) {
  LinkTable table;  // host memory, one 12.5 GB/s NIC per node
  CostModel oneNic = costModelFromLinks(table, IntraNodeMedium::Memory);
  table.nicsPerNode = 4;
  CostModel fourNics = costModelFromLinks(table, IntraNodeMedium::Memory);
  const int n = 8, perNode = 4;  // two nodes (at 4 x 4 the closed forms of ring and hier tie)
  auto nodes = makeNodes(n, perNode);
  const size_t bytes = size_t(256) << 20;
  double ring = simulatedUs(Algorithm::Ring, bytes, n, nodes, oneNic);
  double hier = simulatedUs(Algorithm::Hier, bytes, n, nodes, oneNic);
  double hierFour = simulatedUs(Algorithm::Hier, bytes, n, nodes, fourNics);
  // The flat ring crosses each node boundary with one flow; hier's rails carry 1/L of it each
  // but all L of them share the node's one NIC, which the simulation must show.
  EXPECT_LT(hier, ring);
  EXPECT_LT(hierFour, 0.6 * hier);  // four NICs: the rails no longer queue on one
  double predictedHier = predictAllReduceUs(Algorithm::Hier, costInputFor(bytes, n, nodes), oneNic);
  EXPECT_NEAR(hier / predictedHier, 1.0, 0.25);
}
