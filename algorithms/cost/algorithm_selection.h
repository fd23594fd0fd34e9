// Algorithm selection for every collective: the cheapest applicable algorithm by the cost
// model (algorithms/cost/collective_cost.h), unless the environment says otherwise.
//
//   WEFT_ALGO   weft's names (algorithms/algorithm.h): ring, tree, rhd, hier, direct, bruck,
//               binomial, pairwise, linear. A comma list allows several (the cheapest is
//               taken); a leading '^' excludes the listed ones instead. Case-insensitive.
//               A plain list applies to every collective that has one of its algorithms and
//               leaves the others to the model ("tree" forces all-reduce only). Sections
//               "COLLECTIVE:LIST" separated by ';' set collectives one by one, e.g.
//               "allreduce:tree;allgather:^ring" (collectives: allreduce, allgather,
//               reducescatter, broadcast, reduce, alltoall, gather, scatter); there every name
//               must belong to that collective. An unknown name is ncclInvalidArgument and the
//               message lists the valid ones. When set, NCCL_ALGO is ignored.
//   NCCL_ALGO   NCCL's syntax and names (Ring, Tree, CollnetDirect, CollnetChain, NVLS,
//               NVLSTree, PAT; case-insensitive; comma list; '^' excludes; the same
//               COLLECTIVE:LIST sections). Ring -> ring (for broadcast and reduce, the
//               pipelined chain along the ring, as in NCCL), Tree -> tree; weft's own names are
//               accepted too. NCCL names weft does not have are ignored with an INFO line as
//               long as at least one weft algorithm remains; a list that leaves none, or a name
//               NCCL does not have either, is ncclInvalidArgument.
//
// An allowed algorithm that cannot run for this call (direct without one host and mapped
// buffers) is skipped; when no allowed algorithm can run, the collective's default (ring,
// pairwise, linear) is used (INFO line).
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/collective_schedule.h"
#include "algorithms/cost/cost_model.h"
#include "algorithms/schedule.h"
#include "nccl.h"

namespace weft {

using AlgorithmMask = std::array<bool, kAlgorithmCount>;

struct SelectionInput {
  Collective collective = Collective::AllReduce;
  size_t bytes = 0;  // the collective's size as nccl-tests reports it
                     // (algorithms/cost/collective_cost.h)
  int nranks = 1;
  std::vector<std::vector<int>> nodes;  // RankLayout::nodes; empty: all ranks on one node
  CostModel model;                      // costModelFromLinks(...), once per communicator
  bool directAvailable = false;         // all-reduce: one host and every peer's buffers mapped here
  std::optional<std::string> ncclAlgo;  // NCCL_ALGO's value when set
  std::optional<std::string> weftAlgo;  // WEFT_ALGO's value when set
};

// Fills ncclAlgo / weftAlgo from the environment.
void readAlgorithmEnv(SelectionInput* input);
// Parses WEFT_ALGO / NCCL_ALGO as selection will, so that a bad value fails communicator
// creation rather than the first collective.
ncclResult_t checkAlgorithmEnv();

struct AlgorithmEstimate {
  Algorithm algorithm = Algorithm::Ring;
  bool applicable = true;  // one of the collective's algorithms and can run this call (direct:
                           // one host, mapped buffers)
  bool allowed = true;     // not excluded by WEFT_ALGO / NCCL_ALGO
  double timeUs = 0;       // predicted
  double busBandwidthGBps = 0;
  const char* note = "";  // why not applicable, or "falls back to ring"
};

struct AlgorithmChoice {
  Algorithm algorithm = Algorithm::Ring;
  double timeUs = 0;
  std::array<AlgorithmEstimate, kAlgorithmCount> estimates{};  // indexed by algorithm
  std::string reason;  // "cheapest", "WEFT_ALGO=tree", "NCCL_ALGO=^Ring", "fallback: ..."
};

ncclResult_t selectAlgorithm(const SelectionInput& input, AlgorithmChoice* out);
// selectAlgorithm with input.collective = AllReduce.
ncclResult_t selectAllReduceAlgorithm(const SelectionInput& input, AlgorithmChoice* out);

// What one variable allows, per collective; a collective it does not restrict allows all.
struct AlgorithmPolicy {
  std::array<AlgorithmMask, kCollectiveCount> allowed;
  AlgorithmPolicy() {
    for (auto& mask : allowed) mask.fill(true);
  }
};
// The policy the overrides in `input` set (WEFT_ALGO wins over NCCL_ALGO; neither: all allowed)
// and a description of where it came from ("cheapest", "WEFT_ALGO=tree").
ncclResult_t policyFromOverrides(const SelectionInput& input, AlgorithmPolicy* policy, std::string* source);
// Parses WEFT_ALGO's (ncclNames false) or NCCL_ALGO's value; errors via fail() name `variable`.
ncclResult_t parseAlgorithmPolicy(const char* variable, const std::string& value, bool ncclNames,
                                  AlgorithmPolicy* policy);
// "ring" -> Ring etc. (case-insensitive); false when unknown.
bool parseAlgorithm(const std::string& name, Algorithm* algorithm);
// "allreduce" -> AllReduce etc. (case-insensitive; '_' ignored); false when unknown.
bool parseCollective(const std::string& name, Collective* collective);

}  // namespace weft
