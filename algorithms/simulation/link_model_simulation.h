// A link model for the simulator built from the cost model (algorithms/cost/cost_model.h) and the
// rank layout, and the simulated time of an all-reduce (weft-info plan --simulate).
//
// Links. Every rank has one port onto its node's fabric, with an egress and an ingress side
// (CostModel::intra: latency alpha, bandwidth B per direction). Every node has nicsPerNode NICs,
// each with an egress and an ingress side (CostModel::nic); the rank with local index l (its
// place in its node's list) uses NIC l % nicsPerNode. A message between ranks of one node
// occupies the sender's port egress and the receiver's port ingress; a message between nodes
// occupies the sender's NIC egress and the receiver's NIC ingress (the path from a rank to its
// NIC is not modeled).
//
// Cost of one message of S bytes: it occupies both of its link sides for S/B, starting at the
// earliest time >= the sender's clock at which both are free for that long, and arrives alpha
// after that occupation ends. Alpha is pure latency (does not hold the link), so back-to-back
// small messages overlap their latencies, as a real connection's do.
//
// Contention: each link side keeps a calendar of busy intervals; a transfer takes the earliest
// gap long enough for it (both sides at once). So the ranks of a node that cross the network at
// the same time through one NIC share its bandwidth (their transfers are serialized on it), and
// two messages into one rank (a tree's two children) share that rank's ingress. The simulator
// runs sends in its own order (round robin over ranks, each until it blocks), not time order;
// a send priced later that wants a time already taken by one priced earlier goes into the next
// gap, so the total occupation of every link (what decides bandwidth-bound times) is exact,
// while which of two overlapping transfers goes first is the simulator's order, not FIFO by time.
//
// Local steps (Copy, Reduce, Divide, Scale) cost bytes / CostModel::memory bandwidth, no alpha.
// Recv and RecvReduce add nothing beyond the transfer: the executor reduces each slice as it
// arrives, and the cost model's link bandwidths already cover it (as the closed forms do).
//
// Byte scale: the simulator moves real bytes. To price a 4 GiB call without 4 GiB per rank, the
// call is simulated with a small element count and the model multiplies every byte count it is
// given by `byteScale` (real bytes / simulated bytes). Pieces then differ from the real call's
// by rounding (at most one element of the small count), which is below 1% at the counts used.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "algorithms/cost/cost_model.h"
#include "algorithms/simulation/simulator.h"

namespace weft {

class ContendedLinkModel : public LinkModel {
 public:
  // nodes: ranks of each node (RankLayout::nodes); empty: all `nranks` ranks on one node.
  // streams > 1: the simulator's rank ids are virtual, `streams` per rank (id / streams is the
  // rank): independent parts of one rank's schedule that share its links.
  ContendedLinkModel(const CostModel& model, const std::vector<std::vector<int>>& nodes, int nranks,
                     double byteScale = 1.0, int streams = 1);
  // Without contention (an idle link): alpha + S/B of the message's link class, seconds.
  double transferTime(int src, int dst, size_t bytes) const override;
  double arrivalTime(int src, int dst, size_t bytes, double start) const override;
  double localTime(int rank, StepKind kind, size_t bytes) const override;
  // Forgets every reservation (before running another simulation with the same model).
  void reset() const;

 private:
  struct Calendar {
    std::map<double, double> busy;  // start -> end, disjoint
    double fit(double start, double duration) const;
    void reserve(double start, double duration);
  };
  bool sameNode(int a, int b) const { return nodeOf_[a] == nodeOf_[b]; }
  CostModel model_;
  double scale_;
  int streams_;
  int nics_;
  std::vector<int> nodeOf_, localOf_;
  mutable std::vector<Calendar> portOut_, portIn_;  // per rank
  mutable std::vector<Calendar> nicOut_, nicIn_;    // per node * nics + nic
};

struct SimulatedAllReduce {
  bool ok = false;
  std::string error;
  double timeUs = 0;
  size_t simulatedCount = 0;  // float32 elements the simulation moved per rank
  double byteScale = 1.0;     // real bytes per simulated byte
};

// Builds every rank's schedule for `algorithm` (node-major order, as the runtime does), runs
// them in the simulator with float32 data under a ContendedLinkModel, checks the result (every
// rank must hold the exact sum), and returns the simulated time. Calls of up to 16 * nranks
// elements (at least 4096) are simulated exactly; larger ones with that many elements and a byte
// scale. The tree's schedule is cut into slices of CostModel::sliceBytes (at most 64 slices a
// step) run in pipeline order, reduction then broadcast (see pipelineSchedule), because the
// executor pipelines it and the closed form assumes so; its two halves (trees) run as two
// streams per rank (virtual ranks 2r and 2r + 1 on one set of links), as the executor runs
// them side by side. The other algorithms run step by step, as their closed forms price them.
SimulatedAllReduce simulateAllReduceTime(Algorithm algorithm, size_t bytes, int nranks,
                                         const std::vector<std::vector<int>>& nodes, const CostModel& model);

// The executor's slicing, in an order the in-order simulator can run: the steps from
// phaseStarts[k] up to the next start form phase k (steps before the first start are a phase of
// their own); within a phase, every step is cut into slices of `sliceBytes` (a multiple of the
// element size) and the steps run slice-major (slice 0 of every step of the phase, then slice 1,
// ...). Valid when the steps of a phase name ranges that are identical or disjoint and slice j of
// a step depends only on slice j of earlier steps (the tree's reduction, then its broadcast);
// the caller checks the result.
Schedule pipelineSchedule(const Schedule& schedule, size_t sliceBytes, const std::vector<size_t>& phaseStarts);

}  // namespace weft
