#include "algorithms/algorithm_selection.h"

#include <cctype>
#include <numeric>
#include <strings.h>

#include "algorithms/direct_allreduce.h"
#include "algorithms/hierarchical_allreduce.h"
#include "algorithms/rhd_allreduce.h"
#include "algorithms/ring_allreduce.h"
#include "algorithms/tree_allreduce.h"
#include "common/env.h"
#include "common/log.h"
#include "common/status.h"

namespace weft {

namespace {

constexpr const char* kValidWeftNames = "ring, tree, rhd, hier, direct";

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// Splits "^a,b" into (exclude, [a, b]).
std::vector<std::string> splitList(const std::string& value, bool* exclude) {
  std::string text = trim(value);
  *exclude = !text.empty() && text[0] == '^';
  if (*exclude) text.erase(0, 1);
  std::vector<std::string> names;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    std::string name = trim(text.substr(start, comma - start));
    if (!name.empty()) names.push_back(name);
    start = comma + 1;
  }
  return names;
}

AlgorithmMask finish(const AlgorithmMask& listed, bool exclude) {
  AlgorithmMask allowed;
  for (int i = 0; i < kAllReduceAlgorithmCount; ++i) allowed[i] = exclude ? !listed[i] : listed[i];
  return allowed;
}

bool any(const AlgorithmMask& mask) {
  for (bool b : mask)
    if (b) return true;
  return false;
}

}  // namespace

bool parseAllReduceAlgorithm(const std::string& name, AllReduceAlgorithm* algorithm) {
  for (int i = 0; i < kAllReduceAlgorithmCount; ++i)
    if (strcasecmp(name.c_str(), allReduceAlgorithmName(static_cast<AllReduceAlgorithm>(i))) == 0) {
      *algorithm = static_cast<AllReduceAlgorithm>(i);
      return true;
    }
  return false;
}

ncclResult_t parseWeftAlgo(const std::string& value, AlgorithmMask* allowed) {
  bool exclude = false;
  std::vector<std::string> names = splitList(value, &exclude);
  if (names.empty()) return fail(ncclInvalidArgument, "WEFT_ALGO='%s' names no algorithm; valid names: %s", value.c_str(), kValidWeftNames);
  AlgorithmMask listed{};
  for (const std::string& name : names) {
    AllReduceAlgorithm a;
    if (!parseAllReduceAlgorithm(name, &a))
      return fail(ncclInvalidArgument, "WEFT_ALGO: unknown algorithm '%s'; valid names: %s", name.c_str(), kValidWeftNames);
    listed[static_cast<int>(a)] = true;
  }
  AlgorithmMask result = finish(listed, exclude);
  if (!any(result)) return fail(ncclInvalidArgument, "WEFT_ALGO='%s' excludes every algorithm (%s)", value.c_str(), kValidWeftNames);
  *allowed = result;
  return ncclSuccess;
}

ncclResult_t parseNcclAlgo(const std::string& value, AlgorithmMask* allowed) {
  static const char* const kNcclOnly[] = {"CollnetDirect", "CollnetChain", "NVLS", "NVLSTree", "PAT"};
  bool exclude = false;
  std::vector<std::string> names = splitList(value, &exclude);
  if (names.empty()) return fail(ncclInvalidArgument, "NCCL_ALGO='%s' names no algorithm", value.c_str());
  AlgorithmMask listed{};
  std::string ignored;
  for (const std::string& name : names) {
    AllReduceAlgorithm a;
    if (parseAllReduceAlgorithm(name, &a)) {  // Ring, Tree and weft's own names
      listed[static_cast<int>(a)] = true;
      continue;
    }
    bool ncclName = false;
    for (const char* n : kNcclOnly) ncclName |= strcasecmp(n, name.c_str()) == 0;
    if (!ncclName)
      return fail(ncclInvalidArgument,
                  "NCCL_ALGO: unknown algorithm '%s' (NCCL's names: Ring, Tree, CollnetDirect, CollnetChain, NVLS, "
                  "NVLSTree, PAT; weft's: %s)",
                  name.c_str(), kValidWeftNames);
    ignored += (ignored.empty() ? "" : ", ") + name;
  }
  AlgorithmMask result = finish(listed, exclude);
  if (!any(result))
    return fail(ncclInvalidArgument, "NCCL_ALGO='%s' leaves no algorithm that weft has (weft has Ring, Tree and %s)",
                value.c_str(), kValidWeftNames);
  if (!ignored.empty()) WEFT_INFO(kLogTune | kLogEnv, "NCCL_ALGO: ignoring %s (not available in weft)", ignored.c_str());
  *allowed = result;
  return ncclSuccess;
}

void readAlgorithmEnv(SelectionInput* input) {
  input->ncclAlgo = envString("NCCL_ALGO");
  input->weftAlgo = envString("WEFT_ALGO");
}

ncclResult_t selectAllReduceAlgorithm(const SelectionInput& in, AlgorithmChoice* out) {
  AlgorithmChoice choice;
  AlgorithmMask allowed;
  allowed.fill(true);
  std::string source = "cheapest";
  if (in.weftAlgo && !trim(*in.weftAlgo).empty()) {
    WEFT_CHECK(parseWeftAlgo(*in.weftAlgo, &allowed));
    source = "WEFT_ALGO=" + *in.weftAlgo;
    if (in.ncclAlgo && !trim(*in.ncclAlgo).empty())
      WEFT_INFO(kLogTune | kLogEnv, "WEFT_ALGO is set: ignoring NCCL_ALGO=%s", in.ncclAlgo->c_str());
  } else if (in.ncclAlgo && !trim(*in.ncclAlgo).empty()) {
    WEFT_CHECK(parseNcclAlgo(*in.ncclAlgo, &allowed));
    source = "NCCL_ALGO=" + *in.ncclAlgo;
  }

  CostInput cost{in.bytes, in.nranks, {}};
  for (const auto& node : in.nodes) cost.nodeSizes.push_back(static_cast<int>(node.size()));
  const bool oneNode = in.nodes.size() <= 1;
  const bool uniform = in.nodes.empty() || nodesAreUniform(in.nodes);
  int best = -1;
  for (int i = 0; i < kAllReduceAlgorithmCount; ++i) {
    auto a = static_cast<AllReduceAlgorithm>(i);
    AlgorithmEstimate& e = choice.estimates[i];
    e.algorithm = a;
    e.allowed = allowed[i];
    e.timeUs = predictAllReduceUs(a, cost, in.model);
    e.busBandwidthGBps = allReduceBusBandwidthGBps(in.bytes, in.nranks, e.timeUs);
    if (a == AllReduceAlgorithm::Direct && !(oneNode && in.directAvailable)) {
      e.applicable = false;
      e.note = oneNode ? "buffers not mapped by every peer" : "ranks on more than one host";
    }
    if (a == AllReduceAlgorithm::Hier && !uniform) e.note = "uneven nodes: runs as ring";
    else if (a == AllReduceAlgorithm::Hier && (oneNode || in.nodes.size() == static_cast<size_t>(in.nranks)))
      e.note = "one level: runs as ring";
    if (!e.applicable || !e.allowed) continue;
    // Strictly cheaper only: ties go to the earlier (simpler) algorithm.
    if (best < 0 || e.timeUs < choice.estimates[best].timeUs * (1 - 1e-9)) best = i;
  }
  if (best < 0) {
    best = static_cast<int>(AllReduceAlgorithm::Ring);
    source = "fallback: no allowed algorithm can run this call (" + source + ")";
    WEFT_INFO(kLogTune, "AllReduce: %s; using ring", source.c_str());
  }
  choice.algorithm = static_cast<AllReduceAlgorithm>(best);
  choice.timeUs = choice.estimates[best].timeUs;
  choice.reason = source;
  WEFT_INFO(kLogTune, "AllReduce %zu bytes, %d ranks, %zu nodes: %s (%s), predicted %.1f us [ring %.1f tree %.1f rhd %.1f hier %.1f direct %.1f%s]",
            in.bytes, in.nranks, in.nodes.empty() ? size_t(1) : in.nodes.size(), allReduceAlgorithmName(choice.algorithm),
            source.c_str(), choice.timeUs, choice.estimates[0].timeUs, choice.estimates[1].timeUs,
            choice.estimates[2].timeUs, choice.estimates[3].timeUs, choice.estimates[4].timeUs,
            choice.estimates[4].applicable ? "" : " n/a");
  *out = std::move(choice);
  return ncclSuccess;
}

Schedule buildAllReduceSchedule(AllReduceAlgorithm algorithm, const AllReduceShape& s) {
  std::vector<int> order = s.order;
  if (order.empty()) {
    order.resize(s.nranks);
    std::iota(order.begin(), order.end(), 0);
  }
  std::vector<std::vector<int>> nodes = s.nodes;
  if (nodes.empty()) nodes.push_back(order);
  switch (algorithm) {
    case AllReduceAlgorithm::Tree: return buildTreeAllReduce({s.count, s.elementSize, s.rank, order, s.average});
    case AllReduceAlgorithm::Rhd: return buildRhdAllReduce({s.count, s.elementSize, s.rank, order, s.average});
    case AllReduceAlgorithm::Hier: return buildHierarchicalAllReduce({s.count, s.elementSize, s.rank, nodes, s.average});
    case AllReduceAlgorithm::Direct: return buildDirectAllReduce({s.count, s.elementSize, s.rank, s.nranks, s.average});
    default: return buildRingAllReduce({s.count, s.elementSize, s.rank, order, s.average});
  }
}

}  // namespace weft
