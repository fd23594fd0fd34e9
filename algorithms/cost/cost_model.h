// The alpha-beta cost model: predicted time of each all-reduce algorithm from the call's size,
// the rank layout (how many nodes, how many ranks on each) and the latency (alpha) and
// bandwidth (1/beta) of the two kinds of hop a schedule makes: between ranks of one node and
// between nodes. The link figures come from topology/link_model.h's table (NIC speed and
// NVLink presence from the topology model when there is one) and may be overridden per link
// class by a tuning file (WEFT_TUNING_FILE).
//
// Tuning file format (text, one directive a line, '#' starts a comment, blank lines ignored):
//
//   link <class> [latency_us <x>] [bandwidth_GBps <y>]   # class: a link_model.h name
//   nics_per_node <n>                                    # NICs a node's ranks share
//
// <class> is one of NVLink, PCIe, PCIeRoot, InterSocket, Memory, Network, Loopback
// (case-insensitive).
// Numbers must be positive. Anything else is an error naming the file and line.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "nccl.h"
#include "topology/link_model.h"

namespace weft {

struct TopologyModel;

struct LinkCost {
  double latencyUs = 0;      // alpha: one message's fixed cost
  double bandwidthGBps = 0;  // 1/beta: bytes per ns per direction
  double timeUs(double bytes) const { return latencyUs + bytes / (bandwidthGBps * 1e3); }
};

// Per link class latency/bandwidth: the link_model.h table, then the topology, then tuning.
struct LinkTable {
  std::array<LinkCost, static_cast<size_t>(LinkType::Count)> links;
  int nicsPerNode = 1;
  // Which terms a tuning file set (measured, not defaults): latencyBit, bandwidthBit, kNicsBit.
  uint32_t tunedMask = 0;
  static uint32_t latencyBit(LinkType type) { return 1u << static_cast<unsigned>(type); }
  static uint32_t bandwidthBit(LinkType type) { return 1u << (8 + static_cast<unsigned>(type)); }
  static constexpr uint32_t kNicsBit = 1u << 16;
  // Rank 0 sets this in what it sends when its WEFT_TUNING_FILE could not be read, so that
  // every rank fails with it instead of waiting for rank 0.
  static constexpr uint32_t kTuningFileFailedBit = 1u << 31;
  LinkTable();  // the link_model.h defaults, one NIC per node
  LinkCost& operator[](LinkType type) { return links[static_cast<size_t>(type)]; }
  const LinkCost& operator[](LinkType type) const { return links[static_cast<size_t>(type)]; }
};

// What kind of hop joins two ranks of one node: NVLink when the topology's GPUs have NVLink,
// PCIe when it has GPUs without, Memory (shared memory) for host buffers; Loopback when
// same-host ranks talk through sockets (shared memory turned off).
enum class IntraNodeMedium { Auto, Memory, PCIe, NVLink, Loopback };

struct CostModel {
  LinkCost intra;  // rank <-> rank on one node
  LinkCost nic;    // one NIC (node <-> network), one flow
  int nicsPerNode = 1;
  LinkCost memory;                // reading a peer's buffer directly (direct all-reduce)
  size_t sliceBytes = 256 << 10;  // the executor's pipelining unit (tree pipeline fill)

  // Bounds on the rings' channels (NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS).
  int minChannels = 1;
  int maxChannels = 32;

  // The inter-node bandwidth one rank gets when all `ranksPerNode` ranks of a node use the
  // network at once (hierarchical rails, trees): the node's NICs shared among them.
  LinkCost interPerRank(int ranksPerNode) const;

  // Channels of a ring (all-reduce, all-gather, reduce-scatter) of `bytes`, the size
  // nccl-tests reports (algorithms/builders/channels.h): one per NIC a node's
  // ranks can use when there are several nodes (each channel leaves the node through its own
  // NIC), else one; clamped to [minChannels, maxChannels]; then at most one per
  // kMinChannelBytes of the call, so that small calls stay on one ring.
  int ringChannels(int ranksPerNode, int nodes, double bytes) const;
  // The same for a layout (RankLayout::nodes; empty: one node), sized by its smallest node.
  int ringChannels(const std::vector<std::vector<int>>& nodes, double bytes) const;
  static constexpr double kMinChannelBytes = 64 * 1024;
};

// Reads NCCL_MIN_NCHANNELS and NCCL_MAX_NCHANNELS (as NCCL does: 1 <= min <= max) into `model`.
void applyChannelEnv(CostModel* model);

// The table's defaults for `model` (may be null: host memory, one 12.5 GB/s NIC): NIC speed and
// count from the model's NICs, NVLink bandwidth from its GPUs.
LinkTable linkTableFromTopology(const TopologyModel* model);
// Applies the tuning file at `path` on top of `table`; errors (via fail()) name file and line.
ncclResult_t applyTuningFile(const std::string& path, LinkTable* table);
// Same, for text already read (`origin` names it in errors).
ncclResult_t applyTuningText(const std::string& text, const std::string& origin, LinkTable* table);
// The link table for this process: from the topology, then WEFT_TUNING_FILE when set.
ncclResult_t linkTableFromEnv(const TopologyModel* model, LinkTable* table);

// The terms every rank of a communicator can count on when the ranks' tables differ (hosts with
// other NICs or machine models): per link class the highest latency and lowest bandwidth, and
// the fewest NICs. Every rank computes it from the same tables, so all price alike.
LinkTable slowestLinkTable(const std::vector<LinkTable>& tables);
// The terms a communicator prices with, from every rank's table in rank order: the slowest
// (above), except the terms rank 0's tuning file set, which are rank 0's. Only rank 0 reads
// WEFT_TUNING_FILE (the file a characterization wrote may exist on one host only), and every
// rank computes this from the same tables, so all ranks build the same schedules.
LinkTable agreedLinkTable(const std::vector<LinkTable>& tables);

// Chooses the hop classes for a communicator.
CostModel costModelFromLinks(const LinkTable& table, IntraNodeMedium medium, const TopologyModel* model = nullptr);

// The call's shape as the model sees it.
struct CostInput {
  size_t bytes = 0;
  int nranks = 1;
  std::vector<int> nodeSizes;  // ranks per node; empty: all on one node
};
// The shape of a call of `bytes` on `nranks` ranks laid out in `nodes` (RankLayout::nodes).
CostInput costInputFor(size_t bytes, int nranks, const std::vector<std::vector<int>>& nodes);

// Predicted time in microseconds of `algorithm` for `input` (the hierarchical one on uneven
// nodes is priced as the ring it falls back to; direct assumes one node); 0 for algorithms that
// are not all-reduce algorithms (collective_cost.h prices those).
double predictAllReduceUs(Algorithm algorithm, const CostInput& input, const CostModel& model);

// The bandwidth lower bound of any all-reduce: 2(n-1)/n * S / B, B the fastest per-rank link.
double allReduceLowerBoundUs(const CostInput& input, const CostModel& model);

// NCCL's bus bandwidth of an all-reduce that took `us`: 2(n-1)/n * S / t, GB/s.
double allReduceBusBandwidthGBps(size_t bytes, int nranks, double us);

}  // namespace weft
