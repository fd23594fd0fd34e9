// All-reduce algorithm selection: the cheapest applicable algorithm by the cost model, unless
// the environment says otherwise.
//
//   WEFT_ALGO   weft's names: ring, tree, rhd, hier, direct. A comma list allows several (the
//               cheapest of them is taken); a leading '^' excludes the listed ones instead.
//               Case-insensitive. An unknown name is ncclInvalidArgument (the message lists
//               the valid names). When set, NCCL_ALGO is ignored.
//   NCCL_ALGO   NCCL's syntax and names (Ring, Tree, CollnetDirect, CollnetChain, NVLS,
//               NVLSTree, PAT; case-insensitive; comma list; '^' excludes). Ring -> ring,
//               Tree -> tree; weft's own names are accepted too. NCCL names weft does not have
//               are ignored with an INFO line as long as at least one weft algorithm remains;
//               a list that leaves none, or a name NCCL does not have either, is
//               ncclInvalidArgument.
//
// An allowed algorithm that cannot run for this call (direct without one host and mapped
// buffers) is skipped; when no allowed algorithm can run, ring is used (INFO line).
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/cost_model.h"
#include "algorithms/schedule.h"
#include "nccl.h"

namespace weft {

using AlgorithmMask = std::array<bool, kAllReduceAlgorithmCount>;

struct SelectionInput {
  size_t bytes = 0;                        // count * element size
  int nranks = 1;
  std::vector<std::vector<int>> nodes;     // RankLayout::nodes; empty: all ranks on one node
  CostModel model;                         // costModelFromLinks(...), once per communicator
  bool directAvailable = false;            // one host and every peer's buffers mapped here
  std::optional<std::string> ncclAlgo;     // NCCL_ALGO's value when set
  std::optional<std::string> weftAlgo;     // WEFT_ALGO's value when set
};

// Fills ncclAlgo / weftAlgo from the environment.
void readAlgorithmEnv(SelectionInput* input);

struct AlgorithmEstimate {
  AllReduceAlgorithm algorithm = AllReduceAlgorithm::Ring;
  bool applicable = true;  // can run this call (direct: one host, mapped buffers)
  bool allowed = true;     // not excluded by WEFT_ALGO / NCCL_ALGO
  double timeUs = 0;       // predicted
  double busBandwidthGBps = 0;
  const char* note = "";   // why not applicable, or "falls back to ring"
};

struct AlgorithmChoice {
  AllReduceAlgorithm algorithm = AllReduceAlgorithm::Ring;
  double timeUs = 0;
  std::array<AlgorithmEstimate, kAllReduceAlgorithmCount> estimates{};  // indexed by algorithm
  std::string reason;  // "cheapest", "WEFT_ALGO=tree", "NCCL_ALGO=^Ring", "fallback: ..."
};

ncclResult_t selectAllReduceAlgorithm(const SelectionInput& input, AlgorithmChoice* out);

// Parses one variable's value into the set of allowed algorithms (errors via fail()).
ncclResult_t parseWeftAlgo(const std::string& value, AlgorithmMask* allowed);
ncclResult_t parseNcclAlgo(const std::string& value, AlgorithmMask* allowed);
// "ring" -> Ring etc. (case-insensitive); false when unknown.
bool parseAllReduceAlgorithm(const std::string& name, AllReduceAlgorithm* algorithm);

// Everything the builders need, for any algorithm (what the runtime and weft-info have).
struct AllReduceShape {
  size_t count = 0;
  size_t elementSize = 0;
  int rank = 0;
  int nranks = 1;
  std::vector<int> order;                // ring / tree / rhd order (RankLayout::ringOrder); empty: 0..n-1
  std::vector<std::vector<int>> nodes;   // RankLayout::nodes; empty: one node
  bool average = false;
};
Schedule buildAllReduceSchedule(AllReduceAlgorithm algorithm, const AllReduceShape& shape);

}  // namespace weft
