// The cost model and all-reduce selection: on the DGX-like fixture (8 GPUs on NVSwitch, eight
// 400 Gb/s NICs, 8 ranks per node) the log-depth algorithms win small messages at many ranks,
// ring or hierarchical the large ones, hierarchical multi-node when the network is slow; the
// tuning file, NCCL_ALGO and WEFT_ALGO are parsed as documented, errors included.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "algorithms/algorithm_registry.h"
#include "algorithms/cost/algorithm_selection.h"
#include "algorithms/cost/cost_model.h"
#include "common/status.h"
#include "tests/unit/topology_test_util.h"
#include "topology/topology_model.h"
#include "topology/topology_xml.h"

using namespace weft;

namespace {

class Selection : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(loadTopologyFile(weft::testing::fixturePath("dgx_h100.xml"), &dgx_), ncclSuccess) << lastErrorMessage();
    links_ = linkTableFromTopology(&dgx_);
    model_ = costModelFromLinks(links_, IntraNodeMedium::Auto, &dgx_);
  }

  SelectionInput input(size_t bytes, int n, int perNode = 8) const {
    SelectionInput in;
    in.bytes = bytes;
    in.nranks = n;
    in.model = model_;
    in.nodes.resize((n + perNode - 1) / perNode);
    for (int r = 0; r < n; ++r) in.nodes[r / perNode].push_back(r);
    return in;
  }

  Algorithm pick(const SelectionInput& in) {
    AlgorithmChoice choice;
    EXPECT_EQ(selectAllReduceAlgorithm(in, &choice), ncclSuccess) << lastErrorMessage();
    return choice.algorithm;
  }

  TopologyModel dgx_;
  LinkTable links_;
  CostModel model_;
};

TEST_F(Selection, LinksComeFromTheFixture) {
  EXPECT_DOUBLE_EQ(links_[LinkType::Network].bandwidthGBps, 50.0);  // 400 Gb/s
  EXPECT_EQ(links_.nicsPerNode, 8);
  EXPECT_DOUBLE_EQ(model_.intra.bandwidthGBps, 450.0);           // NVLink
  EXPECT_DOUBLE_EQ(model_.interPerRank(8).bandwidthGBps, 50.0);  // one NIC per GPU
  EXPECT_DOUBLE_EQ(model_.interPerRank(16).bandwidthGBps, 25.0);
  // Without a topology: host memory through shared-memory slots, the table's 12.5 GB/s NIC.
  CostModel host = costModelFromLinks(linkTableFromTopology(nullptr), IntraNodeMedium::Auto);
  EXPECT_DOUBLE_EQ(host.intra.bandwidthGBps, linkClassInfo(LinkType::Memory).nominalGBps / 2);
  EXPECT_DOUBLE_EQ(host.nic.bandwidthGBps, 12.5);
}

TEST_F(Selection, LogDepthAlgorithmsWinSmallMessagesAtManyRanks) {
  for (int n : {64, 512, 4096})
    for (size_t bytes : {size_t(8), size_t(1024), size_t(16 << 10)}) {
      SelectionInput in = input(bytes, n);
      AlgorithmChoice choice;
      ASSERT_EQ(selectAllReduceAlgorithm(in, &choice), ncclSuccess);
      // Recursive doubling makes log2 n hops where tree and rhd make 2 log2 n: it wins while
      // latency dominates; from ~16 KiB its whole-buffer exchanges may lose to rhd's halving
      // pieces or the tree's pipeline.
      if (bytes <= 1024) {
        EXPECT_EQ(choice.algorithm, Algorithm::Doubling) << n << " ranks " << bytes << " bytes";
      } else {
        EXPECT_TRUE(choice.algorithm == Algorithm::Tree || choice.algorithm == Algorithm::Rhd ||
                    choice.algorithm == Algorithm::Doubling)
            << n << " ranks " << bytes << " bytes: " << algorithmName(choice.algorithm);
      }
      EXPECT_LT(choice.estimates[static_cast<int>(Algorithm::Doubling)].timeUs * 1.5, choice.estimates[1].timeUs)
          << "doubling vs tree at " << n << " ranks " << bytes << " bytes";
      EXPECT_LT(choice.estimates[1].timeUs * 5, choice.estimates[0].timeUs) << "tree vs ring at " << n;
      // NCCL's choice set (Ring, Tree): tree.
      in.ncclAlgo = "Ring,Tree";
      EXPECT_EQ(pick(in), Algorithm::Tree) << n << " ranks " << bytes << " bytes";
    }
  // In the alpha-beta model rhd's latency matches the tree's (both ~2 log2 n hops), so either
  // may win; both beat ring and hier by far.
  SelectionInput odd = input(64 << 10, 1000);
  AlgorithmChoice choice;
  ASSERT_EQ(selectAllReduceAlgorithm(odd, &choice), ncclSuccess);
  EXPECT_LT(choice.estimates[1].timeUs * 10, choice.estimates[3].timeUs);
  EXPECT_LT(choice.estimates[2].timeUs * 10, choice.estimates[3].timeUs);
}

TEST_F(Selection, RingOrHierWinLargeMessages) {
  // One node: ring; rhd has the same bandwidth term and fewer hops, so it may edge ahead, and
  // hier is the same ring there (ties go to ring).
  SelectionInput one = input(size_t(1) << 30, 8);
  Algorithm a = pick(one);
  EXPECT_TRUE(a == Algorithm::Ring || a == Algorithm::Rhd) << algorithmName(a);
  one.ncclAlgo = "Ring,Tree";
  EXPECT_EQ(pick(one), Algorithm::Ring);
  // Many nodes: the ring, run on one channel per NIC (8 here), so every node boundary is
  // crossed on all eight NICs at once, as NCCL's rings do: ~380-395 GB/s busbw, beside ~50 for
  // a single channel (the tree here) and ~225-240 for hier and rhd, whose NVLink and network
  // phases follow each other. At 4096 ranks the ring's 2(n-1) network latencies need 4 GiB.
  for (int n : {64, 512, 4096}) {
    SelectionInput in = input(n == 4096 ? size_t(4) << 30 : size_t(1) << 30, n);
    AlgorithmChoice choice;
    ASSERT_EQ(selectAllReduceAlgorithm(in, &choice), ncclSuccess);
    EXPECT_EQ(choice.algorithm, Algorithm::Ring) << n;
    EXPECT_LT(choice.timeUs * 3, choice.estimates[static_cast<int>(Algorithm::Tree)].timeUs) << n;
    // One channel (NCCL_MAX_NCHANNELS=1): the ring falls to one NIC's pace and hier or rhd win.
    SelectionInput oneChannel = in;
    oneChannel.model.maxChannels = 1;
    Algorithm a = pick(oneChannel);
    EXPECT_TRUE(a == Algorithm::Hier || a == Algorithm::Rhd) << n << ": " << algorithmName(a);
    in.weftAlgo = "tree,hier";
    EXPECT_EQ(pick(in), Algorithm::Hier) << n;
  }
  EXPECT_EQ(pick(input(size_t(1) << 30, 96)), Algorithm::Ring);
  // Mid sizes at other rank counts: rhd's fold stretches distances across nodes, and hier wins.
  EXPECT_EQ(pick(input(size_t(16) << 20, 96)), Algorithm::Hier);
}

TEST_F(Selection, HierWinsMultiNodeWithSlowNetwork) {
  LinkTable slow = links_;
  ASSERT_EQ(applyTuningText("link Network latency_us 20 bandwidth_GBps 3\n", "slow", &slow), ncclSuccess);
  SelectionInput in = input(64 << 20, 96);
  in.model = costModelFromLinks(slow, IntraNodeMedium::Auto, &dgx_);
  AlgorithmChoice choice;
  ASSERT_EQ(selectAllReduceAlgorithm(in, &choice), ncclSuccess);
  EXPECT_EQ(choice.algorithm, Algorithm::Hier);
  // The ring (even on eight channels) pays 2(n-1) slow network latencies, the tree one NIC.
  EXPECT_LT(choice.estimates[3].timeUs * 1.5, choice.estimates[0].timeUs);
  EXPECT_LT(choice.estimates[3].timeUs * 4, choice.estimates[1].timeUs);
  // Uneven nodes: hierarchical runs as ring, so it is never strictly cheaper.
  in.nodes = {{0, 1, 2}, {3, 4, 5, 6, 7}};
  in.nranks = 8;
  EXPECT_NE(pick(in), Algorithm::Hier);
}

TEST_F(Selection, DirectOnlyOnOneHostWithMappedBuffers) {
  SelectionInput in = input(1 << 20, 8);
  in.model = costModelFromLinks(linkTableFromTopology(nullptr), IntraNodeMedium::Memory);
  AlgorithmChoice choice;
  ASSERT_EQ(selectAllReduceAlgorithm(in, &choice), ncclSuccess);
  EXPECT_FALSE(choice.estimates[4].applicable);
  EXPECT_NE(choice.algorithm, Algorithm::Direct);
  in.directAvailable = true;
  EXPECT_EQ(pick(in), Algorithm::Direct);
  SelectionInput two = input(1 << 20, 16);
  two.directAvailable = true;  // two hosts: never
  EXPECT_NE(pick(two), Algorithm::Direct);
  // Forced but impossible: ring, with the reason saying so.
  two.weftAlgo = "direct";
  ASSERT_EQ(selectAllReduceAlgorithm(two, &choice), ncclSuccess);
  EXPECT_EQ(choice.algorithm, Algorithm::Ring);
  EXPECT_NE(choice.reason.find("fallback"), std::string::npos);
}

// Same-host ranks joined by sockets (shared memory off) pay a socket's latency per message,
// not memory's. On two ranks doubling (one exchange of the whole buffer) saves the ring one
// latency and costs it a reduction of S/2 more in memory: with the table's figures that wins
// at 256 KiB over sockets (8 us against 1.3 us) and loses over shared memory (0.1 us against
// 1.3 us); at 4 MiB the reduction (21 us) outweighs a socket's latency too.
TEST_F(Selection, SocketsBetweenSameHostRanksArePricedAsLoopback) {
  const LinkTable table = linkTableFromTopology(nullptr);
  const CostModel sockets = costModelFromLinks(table, IntraNodeMedium::Loopback);
  EXPECT_DOUBLE_EQ(sockets.intra.latencyUs, table[LinkType::Loopback].latencyUs);
  EXPECT_DOUBLE_EQ(sockets.intra.bandwidthGBps, table[LinkType::Loopback].bandwidthGBps);
  SelectionInput in = input(256 << 10, 2);
  in.model = sockets;
  EXPECT_EQ(pick(in), Algorithm::Doubling);
  in.bytes = 4 << 20;
  EXPECT_EQ(pick(in), Algorithm::Ring);
  in.bytes = 256 << 10;
  in.model = costModelFromLinks(table, IntraNodeMedium::Memory);
  EXPECT_EQ(pick(in), Algorithm::Ring);
}

TEST_F(Selection, EnvironmentOverrides) {
  SelectionInput in = input(8, 512);
  in.weftAlgo = "ring";
  EXPECT_EQ(pick(in), Algorithm::Ring);
  in.weftAlgo = "HIER";
  EXPECT_EQ(pick(in), Algorithm::Hier);
  in.weftAlgo = "^tree,rhd";
  in.ncclAlgo = "Tree";  // ignored: WEFT_ALGO wins
  Algorithm a = pick(in);
  EXPECT_TRUE(a != Algorithm::Tree && a != Algorithm::Rhd);
  in.weftAlgo.reset();
  EXPECT_EQ(pick(in), Algorithm::Tree);
  in.ncclAlgo = "ring";
  EXPECT_EQ(pick(in), Algorithm::Ring);
  in.ncclAlgo = "Tree,CollnetDirect,NVLS";  // NCCL names weft lacks: ignored, tree remains
  EXPECT_EQ(pick(in), Algorithm::Tree);
  in.ncclAlgo = "^Tree";
  EXPECT_NE(pick(in), Algorithm::Tree);
  in.ncclAlgo = "";  // empty: not set
  EXPECT_NE(pick(in), Algorithm::Ring);
}

TEST_F(Selection, EnvironmentErrors) {
  SelectionInput in = input(1024, 64);
  AlgorithmChoice choice;
  in.weftAlgo = "butterfly";
  EXPECT_EQ(selectAllReduceAlgorithm(in, &choice), ncclInvalidArgument);
  EXPECT_NE(lastErrorMessage().find("butterfly"), std::string::npos);
  EXPECT_NE(lastErrorMessage().find("ring, tree, rhd, hier, direct"), std::string::npos);
  in.weftAlgo = "^ring,tree,rhd,hier,direct";
  EXPECT_EQ(selectAllReduceAlgorithm(in, &choice), ncclInvalidArgument);
  in.weftAlgo = " , ";
  EXPECT_EQ(selectAllReduceAlgorithm(in, &choice), ncclInvalidArgument);
  in.weftAlgo.reset();
  in.ncclAlgo = "CollnetDirect,NVLS";  // nothing weft has remains
  EXPECT_EQ(selectAllReduceAlgorithm(in, &choice), ncclInvalidArgument);
  EXPECT_NE(lastErrorMessage().find("NCCL_ALGO"), std::string::npos);
  in.ncclAlgo = "Rign";
  EXPECT_EQ(selectAllReduceAlgorithm(in, &choice), ncclInvalidArgument);
  EXPECT_NE(lastErrorMessage().find("Rign"), std::string::npos);
  in.ncclAlgo = "^Ring,Tree,rhd,hier,direct,PAT";
  EXPECT_EQ(selectAllReduceAlgorithm(in, &choice), ncclInvalidArgument);
}

TEST_F(Selection, EstimatesCoverEveryAlgorithm) {
  AlgorithmChoice choice;
  ASSERT_EQ(selectAllReduceAlgorithm(input(64 << 20, 64), &choice), ncclSuccess);
  for (int i = 0; i < kAlgorithmCount; ++i) {
    EXPECT_EQ(static_cast<int>(choice.estimates[i].algorithm), i);
    if (algorithmApplies(Collective::AllReduce, static_cast<Algorithm>(i))) {
      EXPECT_GT(choice.estimates[i].timeUs, 0);
    } else {
      EXPECT_FALSE(choice.estimates[i].applicable) << algorithmName(static_cast<Algorithm>(i));
    }
  }
  EXPECT_DOUBLE_EQ(choice.timeUs, choice.estimates[static_cast<int>(choice.algorithm)].timeUs);
  // No algorithm beats the bandwidth bound.
  CostInput cost{64 << 20, 64, std::vector<int>(8, 8)};
  double bound = allReduceLowerBoundUs(cost, model_);
  for (const auto& e : choice.estimates)
    if (e.applicable) {
      EXPECT_GE(e.timeUs, bound) << algorithmName(e.algorithm);
    }
}

// Every (collective, algorithm) row can build and price: dispatch calls both unconditionally.
TEST(AlgorithmRegistry, EveryRowHasABuilderAndAPrice) {
  ASSERT_FALSE(collectiveAlgorithmTable().empty());
  for (const CollectiveAlgorithm& row : collectiveAlgorithmTable()) {
    EXPECT_NE(row.build, nullptr) << collectiveName(row.collective) << " " << algorithmName(row.algorithm);
    EXPECT_NE(row.price, nullptr) << collectiveName(row.collective) << " " << algorithmName(row.algorithm);
  }
}

TEST(TuningFile, ParsesAndRejects) {
  LinkTable table;
  ASSERT_EQ(
      applyTuningText("# measured\n\nlink network bandwidth_GBps 23.5 latency_us 3 # ib\nlink NVLink latency_us 1\n"
                      "nics_per_node 4\nlink loopback latency_us 5\n",
                      "t", &table),
      ncclSuccess)
      << lastErrorMessage();
  EXPECT_DOUBLE_EQ(table[LinkType::Network].bandwidthGBps, 23.5);
  EXPECT_DOUBLE_EQ(table[LinkType::Network].latencyUs, 3);
  EXPECT_DOUBLE_EQ(table[LinkType::NVLink].latencyUs, 1);
  EXPECT_DOUBLE_EQ(table[LinkType::NVLink].bandwidthGBps, linkClassInfo(LinkType::NVLink).nominalGBps);
  EXPECT_EQ(table.nicsPerNode, 4);
  EXPECT_DOUBLE_EQ(table[LinkType::Loopback].latencyUs, 5);
  const char* bad[] = {"link Warp latency_us 1\n",
                       "link PCIe latency_us\n",
                       "link PCIe latency_us -1\n",
                       "link PCIe speed 5\n",
                       "bandwidth 5\n",
                       "nics_per_node 1.5\n",
                       "link PCIe latency_us 1x\n",
                       "nics_per_node 2000000000000000000000000\n"};
  for (const char* text : bad) {
    LinkTable t;
    EXPECT_EQ(applyTuningText(std::string("# ok\n") + text, "tune.txt", &t), ncclInvalidArgument) << text;
    EXPECT_NE(lastErrorMessage().find("tune.txt:2"), std::string::npos) << lastErrorMessage();
  }
  LinkTable t;
  EXPECT_EQ(applyTuningText("link Warp latency_us 1\n", "t", &t), ncclInvalidArgument);
  EXPECT_NE(lastErrorMessage().find("(NVLink, PCIe, PCIeRoot, InterSocket, Memory, Network, Loopback)"),
            std::string::npos)
      << lastErrorMessage();
  EXPECT_EQ(applyTuningFile("/nonexistent/weft-tuning", &t), ncclInvalidArgument);
  EXPECT_NE(lastErrorMessage().find("/nonexistent/weft-tuning"), std::string::npos);
  // From a file, through WEFT_TUNING_FILE.
  std::string path = ::testing::TempDir() + "weft_tuning_test.txt";
  std::ofstream(path) << "link Network latency_us 7 bandwidth_GBps 1\n";
  setenv("WEFT_TUNING_FILE", path.c_str(), 1);
  ASSERT_EQ(linkTableFromEnv(nullptr, &t), ncclSuccess) << lastErrorMessage();
  unsetenv("WEFT_TUNING_FILE");
  EXPECT_DOUBLE_EQ(t[LinkType::Network].latencyUs, 7);
  std::remove(path.c_str());
}

// What the tuning file set is marked, so that the communicator takes rank 0's measured terms
// and the slowest of every rank's for the rest.
TEST(TuningFile, RankZerosMeasuredTermsWinTheRestIsTheSlowest) {
  LinkTable rankZero, other;
  ASSERT_EQ(applyTuningText("link Memory bandwidth_GBps 1000\nlink Network latency_us 0.5\nnics_per_node 4\n", "rank0",
                            &rankZero),
            ncclSuccess);
  EXPECT_EQ(rankZero.tunedMask,
            LinkTable::bandwidthBit(LinkType::Memory) | LinkTable::latencyBit(LinkType::Network) | LinkTable::kNicsBit);
  other[LinkType::Memory].latencyUs = 9;       // slower than rank 0's default: the slowest wins
  other[LinkType::Network].bandwidthGBps = 1;  // the same
  other[LinkType::Network].latencyUs = 50;     // rank 0 measured this one: rank 0's wins
  other[LinkType::Memory].bandwidthGBps = 5;   // and this one
  other.nicsPerNode = 1;
  const LinkTable agreed = agreedLinkTable({rankZero, other, other});
  EXPECT_DOUBLE_EQ(agreed[LinkType::Memory].bandwidthGBps, 1000);
  EXPECT_DOUBLE_EQ(agreed[LinkType::Network].latencyUs, 0.5);
  EXPECT_EQ(agreed.nicsPerNode, 4);
  EXPECT_DOUBLE_EQ(agreed[LinkType::Memory].latencyUs, 9);
  EXPECT_DOUBLE_EQ(agreed[LinkType::Network].bandwidthGBps, 1);
  // Without a tuning file on rank 0, another rank's measured terms are not preferred: slowest.
  const LinkTable untuned = agreedLinkTable({other, rankZero});
  EXPECT_DOUBLE_EQ(untuned[LinkType::Memory].bandwidthGBps, 5);
  EXPECT_DOUBLE_EQ(untuned[LinkType::Network].latencyUs, 50);
  EXPECT_EQ(untuned.nicsPerNode, 1);
  EXPECT_EQ(untuned.tunedMask, 0u);
}

}  // namespace

// Every collective, on the DGX fixture: the log-round algorithms win small messages at many
// ranks, the bandwidth-optimal ones large messages, as the cost model prices them.
class CollectiveSelection : public Selection {
 protected:
  AlgorithmChoice choose(Collective collective, size_t bytes, int n) {
    SelectionInput in = input(bytes, n);
    in.collective = collective;
    AlgorithmChoice choice;
    EXPECT_EQ(selectAlgorithm(in, &choice), ncclSuccess) << lastErrorMessage();
    return choice;
  }
  double time(const AlgorithmChoice& c, Algorithm a) { return c.estimates[static_cast<int>(a)].timeUs; }
};

TEST_F(CollectiveSelection, OnlyTheCollectivesOwnAlgorithmsArePriced) {
  for (int c = 0; c < kCollectiveCount; ++c) {
    const auto collective = static_cast<Collective>(c);
    AlgorithmChoice choice = choose(collective, 1 << 20, 64);
    EXPECT_TRUE(algorithmApplies(collective, choice.algorithm)) << collectiveName(collective);
    for (int a = 0; a < kAlgorithmCount; ++a) {
      const bool applies = algorithmApplies(collective, static_cast<Algorithm>(a));
      if (!applies) {
        EXPECT_FALSE(choice.estimates[a].applicable);
      }
      if (applies && static_cast<Algorithm>(a) != Algorithm::Direct) {
        EXPECT_GT(choice.estimates[a].timeUs, 0) << collectiveName(collective) << " " << a;
      }
    }
  }
}

TEST_F(CollectiveSelection, AllGatherAndReduceScatter) {
  for (Collective collective : {Collective::AllGather, Collective::ReduceScatter}) {
    const char* name = collectiveName(collective);
    for (int n : {64, 512}) {
      // 8 bytes a rank: the log2 n exchanges of recursive doubling/halving (or Bruck) beat the
      // ring's n-1 steps by far.
      AlgorithmChoice small = choose(collective, 8 * n, n);
      EXPECT_TRUE(small.algorithm == Algorithm::Rhd || small.algorithm == Algorithm::Bruck) << name << " " << n;
      EXPECT_LT(small.timeUs * 5, time(small, Algorithm::Ring)) << name << " " << n;
      // 1 GiB across nodes: the ring on one channel per NIC; on one channel it would go through
      // a single NIC per node boundary and hierarchical (every rank's own NIC carries its
      // rail) takes over.
      AlgorithmChoice large = choose(collective, size_t(1) << 30, n);
      EXPECT_EQ(large.algorithm, Algorithm::Ring) << name << " " << n;
      EXPECT_LT(large.timeUs * 3, time(large, Algorithm::Hier)) << name << " " << n;
      SelectionInput oneChannel = input(size_t(1) << 30, n);
      oneChannel.collective = collective;
      oneChannel.model.maxChannels = 1;
      AlgorithmChoice single;
      ASSERT_EQ(selectAlgorithm(oneChannel, &single), ncclSuccess);
      EXPECT_EQ(single.algorithm, Algorithm::Hier) << name << " " << n;
      EXPECT_LT(single.timeUs * 1.3, time(single, Algorithm::Ring)) << name << " " << n;
    }
    // One node, large: the ring or recursive halving/doubling (equal bytes), not Bruck's copies.
    AlgorithmChoice one = choose(collective, size_t(1) << 30, 8);
    EXPECT_TRUE(one.algorithm == Algorithm::Ring || one.algorithm == Algorithm::Rhd) << name;
  }
}

TEST_F(CollectiveSelection, BroadcastReduceAndAllToAll) {
  for (Collective collective : {Collective::Broadcast, Collective::Reduce}) {
    AlgorithmChoice small = choose(collective, 8, 512);
    EXPECT_EQ(small.algorithm, Algorithm::Binomial) << collectiveName(collective);
    AlgorithmChoice large = choose(collective, size_t(1) << 30, 512);
    EXPECT_EQ(large.algorithm, Algorithm::Ring) << collectiveName(collective);
    EXPECT_LT(large.timeUs * 3, time(large, Algorithm::Binomial));
  }
  AlgorithmChoice small = choose(Collective::AllToAll, 8 * 512, 512);
  EXPECT_EQ(small.algorithm, Algorithm::Bruck);
  AlgorithmChoice large = choose(Collective::AllToAll, size_t(1) << 30, 512);
  EXPECT_EQ(large.algorithm, Algorithm::Pairwise);
  EXPECT_EQ(choose(Collective::Gather, 1 << 20, 64).algorithm, Algorithm::Linear);
}

TEST_F(CollectiveSelection, PerCollectiveOverrides) {
  SelectionInput in = input(1 << 20, 64);
  AlgorithmChoice choice;
  in.collective = Collective::AllGather;
  in.weftAlgo = "allgather:bruck";
  ASSERT_EQ(selectAlgorithm(in, &choice), ncclSuccess) << lastErrorMessage();
  EXPECT_EQ(choice.algorithm, Algorithm::Bruck);
  in.collective = Collective::AllReduce;  // not restricted by an allgather section
  ASSERT_EQ(selectAlgorithm(in, &choice), ncclSuccess);
  EXPECT_NE(choice.reason.find("WEFT_ALGO"), std::string::npos);
  in.weftAlgo = "allreduce:tree; all_gather:^hier,rhd";
  ASSERT_EQ(selectAlgorithm(in, &choice), ncclSuccess);
  EXPECT_EQ(choice.algorithm, Algorithm::Tree);
  in.collective = Collective::AllGather;
  ASSERT_EQ(selectAlgorithm(in, &choice), ncclSuccess);
  EXPECT_TRUE(choice.algorithm == Algorithm::Ring || choice.algorithm == Algorithm::Bruck);
  // A plain list restricts only the collectives it names an algorithm of.
  in.weftAlgo = "tree";
  in.collective = Collective::Broadcast;
  ASSERT_EQ(selectAlgorithm(in, &choice), ncclSuccess);
  EXPECT_TRUE(choice.estimates[static_cast<int>(Algorithm::Binomial)].allowed);
  in.weftAlgo = "binomial";
  in.bytes = size_t(1) << 30;  // the model would take the chain
  ASSERT_EQ(selectAlgorithm(in, &choice), ncclSuccess);
  EXPECT_EQ(choice.algorithm, Algorithm::Binomial);
  // NCCL's Ring is the chain for broadcast, as in NCCL.
  in.weftAlgo.reset();
  in.ncclAlgo = "Ring";
  in.bytes = 8;
  ASSERT_EQ(selectAlgorithm(in, &choice), ncclSuccess);
  EXPECT_EQ(choice.algorithm, Algorithm::Ring);
  // Errors name what is wrong and what is valid.
  in.ncclAlgo.reset();
  in.weftAlgo = "allgather:tree";
  EXPECT_EQ(selectAlgorithm(in, &choice), ncclInvalidArgument);
  EXPECT_NE(lastErrorMessage().find("ring, rhd, bruck, hier"), std::string::npos) << lastErrorMessage();
  in.weftAlgo = "allgaher:ring";
  EXPECT_EQ(selectAlgorithm(in, &choice), ncclInvalidArgument);
  EXPECT_NE(lastErrorMessage().find("allgaher"), std::string::npos);
  EXPECT_NE(lastErrorMessage().find("reducescatter"), std::string::npos);
  in.weftAlgo = "broadcast:^ring,binomial,direct";
  EXPECT_EQ(selectAlgorithm(in, &choice), ncclInvalidArgument);
}
