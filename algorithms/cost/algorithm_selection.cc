#include "algorithms/cost/algorithm_selection.h"

#include <strings.h>
#include <cctype>
#include <cstdio>

#include "algorithms/algorithm_registry.h"
#include "algorithms/builders/rail_layout.h"
#include "algorithms/cost/collective_cost.h"
#include "common/log.h"
#include "common/settings.h"
#include "common/status.h"

namespace weft {

namespace {

constexpr const char* kValidCollectives =
    "allreduce, allgather, reducescatter, broadcast, reduce, alltoall, gather, scatter";
constexpr double kTieTolerance = 0.02;
// NCCL_ALGO names of algorithms weft does not have (those it has are in the registry).
const char* const kNcclOnly[] = {"CollnetDirect", "CollnetChain", "NVLS", "NVLSTree", "PAT"};

// WEFT_ALGO's names, "ring, tree, ...".
const char* validWeftNames() {
  static const std::string names = [] {
    std::string text;
    for (int a = 0; a < kAlgorithmCount; ++a)
      text += (text.empty() ? "" : ", ") + std::string(algorithmName(static_cast<Algorithm>(a)));
    return text;
  }();
  return names.c_str();
}

// NCCL_ALGO's names: those of weft's algorithms, then kNcclOnly.
const char* validNcclNames() {
  static const std::string names = [] {
    std::string text;
    for (int a = 0; a < kAlgorithmCount; ++a)
      if (const char* nccl = algorithmInfo(static_cast<Algorithm>(a)).ncclName)
        text += (text.empty() ? "" : ", ") + std::string(nccl);
    for (const char* nccl : kNcclOnly) text += (text.empty() ? "" : ", ") + std::string(nccl);
    return text;
  }();
  return names.c_str();
}

// An NCCL_ALGO name weft has ("Ring" -> ring), case-insensitive.
bool parseNcclAlgorithm(const std::string& name, Algorithm* algorithm) {
  for (const AlgorithmInfo& info : algorithmTable())
    if (info.ncclName && strcasecmp(name.c_str(), info.ncclName) == 0) {
      *algorithm = info.algorithm;
      return true;
    }
  return false;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(separator, start);
    if (end == std::string::npos) end = text.size();
    std::string part = trim(text.substr(start, end - start));
    if (!part.empty()) parts.push_back(part);
    start = end + 1;
  }
  return parts;
}

bool isNcclOnlyName(const std::string& name) {
  for (const char* n : kNcclOnly)
    if (strcasecmp(n, name.c_str()) == 0) return true;
  return false;
}

bool any(const AlgorithmMask& mask) {
  for (bool b : mask)
    if (b) return true;
  return false;
}

// One list ("^a,b" or "a,b") for `collective`, or for every collective when it is Count.
ncclResult_t applyList(const char* variable, const std::string& list, Collective collective, bool ncclNames,
                       AlgorithmPolicy* policy, std::string* ignored) {
  std::string text = trim(list);
  const bool exclude = !text.empty() && text[0] == '^';
  if (exclude) text.erase(0, 1);
  std::vector<std::string> names = split(text, ',');
  if (names.empty())
    return fail(ncclInvalidArgument, "%s='%s' names no algorithm; valid names: %s", variable, list.c_str(),
                validWeftNames());
  AlgorithmMask listed{};
  for (const std::string& name : names) {
    Algorithm a;
    if (parseAlgorithm(name, &a) || (ncclNames && parseNcclAlgorithm(name, &a))) {
      if (collective != Collective::Count && !algorithmApplies(collective, a))
        return fail(ncclInvalidArgument, "%s: '%s' is not a %s algorithm (%s has: %s)", variable, name.c_str(),
                    collectiveName(collective), collectiveName(collective), algorithmsOf(collective));
      listed[static_cast<int>(a)] = true;
    } else if (ncclNames && isNcclOnlyName(name)) {
      *ignored += (ignored->empty() ? "" : ", ") + name;
    } else if (ncclNames) {
      return fail(ncclInvalidArgument, "%s: unknown algorithm '%s' (NCCL's names: %s; weft's: %s)", variable,
                  name.c_str(), validNcclNames(), validWeftNames());
    } else {
      return fail(ncclInvalidArgument, "%s: unknown algorithm '%s'; valid names: %s", variable, name.c_str(),
                  validWeftNames());
    }
  }
  bool restrictedAny = false;
  for (int c = 0; c < kCollectiveCount; ++c) {
    const auto coll = static_cast<Collective>(c);
    if (collective != Collective::Count && coll != collective) continue;
    AlgorithmMask mine{};
    bool named = false;
    for (int a = 0; a < kAlgorithmCount; ++a) {
      const bool applies = algorithmApplies(coll, static_cast<Algorithm>(a));
      named |= applies && listed[a];
      mine[a] = applies && (exclude ? !listed[a] : listed[a]);
    }
    if (!named) continue;  // a plain list that names none of this collective's algorithms
    if (!any(mine))
      return fail(ncclInvalidArgument, "%s='%s' leaves no %s algorithm (%s has: %s)", variable, list.c_str(),
                  collectiveName(coll), collectiveName(coll), algorithmsOf(coll));
    policy->allowed[c] = mine;
    restrictedAny = true;
  }
  if (!restrictedAny)
    return fail(ncclInvalidArgument, "%s='%s' leaves no algorithm that weft has (weft's names: %s)", variable,
                list.c_str(), validWeftNames());
  return ncclSuccess;
}

}  // namespace

bool parseAlgorithm(const std::string& name, Algorithm* algorithm) {
  for (const AlgorithmInfo& info : algorithmTable())
    if (strcasecmp(name.c_str(), info.name) == 0) {
      *algorithm = info.algorithm;
      return true;
    }
  return false;
}

bool parseCollective(const std::string& name, Collective* collective) {
  std::string compact;
  for (char c : name)
    if (c != '_') compact += c;
  for (int i = 0; i < kCollectiveCount; ++i)
    if (strcasecmp(compact.c_str(), collectiveName(static_cast<Collective>(i))) == 0) {
      *collective = static_cast<Collective>(i);
      return true;
    }
  return false;
}

ncclResult_t parseAlgorithmPolicy(const char* variable, const std::string& value, bool ncclNames,
                                  AlgorithmPolicy* out) {
  AlgorithmPolicy policy;
  std::string ignored;
  std::vector<std::string> sections = split(value, ';');
  if (sections.empty())
    return fail(ncclInvalidArgument, "%s='%s' names no algorithm; valid names: %s", variable, value.c_str(),
                validWeftNames());
  for (const std::string& section : sections) {
    const size_t colon = section.find(':');
    Collective collective = Collective::Count;  // every collective
    std::string list = section;
    if (colon != std::string::npos) {
      const std::string name = trim(section.substr(0, colon));
      if (!parseCollective(name, &collective))
        return fail(ncclInvalidArgument, "%s: unknown collective '%s' in '%s'; valid: %s", variable, name.c_str(),
                    section.c_str(), kValidCollectives);
      list = section.substr(colon + 1);
    }
    WEFT_CHECK(applyList(variable, list, collective, ncclNames, &policy, &ignored));
  }
  if (!ignored.empty())
    WEFT_INFO(kLogTune | kLogEnv, "%s: ignoring %s (not available in weft)", variable, ignored.c_str());
  *out = policy;
  return ncclSuccess;
}

ncclResult_t policyFromOverrides(const SelectionInput& in, AlgorithmPolicy* policy, std::string* source) {
  *policy = AlgorithmPolicy();
  *source = "cheapest";
  if (in.weftAlgo && !trim(*in.weftAlgo).empty()) {
    WEFT_CHECK(parseAlgorithmPolicy("WEFT_ALGO", *in.weftAlgo, false, policy));
    *source = "WEFT_ALGO=" + *in.weftAlgo;
    if (in.ncclAlgo && !trim(*in.ncclAlgo).empty())
      WEFT_INFO(kLogTune | kLogEnv, "WEFT_ALGO is set: ignoring NCCL_ALGO=%s", in.ncclAlgo->c_str());
  } else if (in.ncclAlgo && !trim(*in.ncclAlgo).empty()) {
    WEFT_CHECK(parseAlgorithmPolicy("NCCL_ALGO", *in.ncclAlgo, true, policy));
    *source = "NCCL_ALGO=" + *in.ncclAlgo;
  }
  return ncclSuccess;
}

ncclResult_t checkAlgorithmEnv() {
  SelectionInput input;
  readAlgorithmEnv(&input);
  AlgorithmPolicy policy;
  std::string source;
  return policyFromOverrides(input, &policy, &source);
}

void readAlgorithmEnv(SelectionInput* input) {
  input->ncclAlgo = settingString(Setting::NcclAlgo);
  input->weftAlgo = settingString(Setting::WeftAlgo);
}

ncclResult_t selectAlgorithm(const SelectionInput& in, AlgorithmChoice* out) {
  const Collective collective = in.collective;
  AlgorithmChoice choice;
  AlgorithmPolicy policy;
  std::string source;
  WEFT_CHECK(policyFromOverrides(in, &policy, &source));
  const AlgorithmMask& allowed = policy.allowed[static_cast<int>(collective)];

  const CostInput cost = costInputFor(in.bytes, in.nranks, in.nodes);
  const bool oneNode = in.nodes.size() <= 1;
  const bool uniform = in.nodes.empty() || nodesAreUniform(in.nodes);
  int best = -1;
  std::string priced;
  for (int i = 0; i < kAlgorithmCount; ++i) {
    auto a = static_cast<Algorithm>(i);
    AlgorithmEstimate& e = choice.estimates[i];
    e.algorithm = a;
    e.allowed = allowed[i];
    if (!algorithmApplies(collective, a)) {
      e.applicable = false;
      e.note = "not an algorithm of this collective";
      continue;
    }
    e.timeUs = predictCollectiveUs(collective, a, cost, in.model);
    e.busBandwidthGBps = collectiveBusBandwidthGBps(collective, in.bytes, in.nranks, e.timeUs);
    const AlgorithmInfo& info = algorithmInfo(a);
    if (info.needsMappedPeers && !(oneNode && in.directAvailable)) {
      e.applicable = false;
      e.note = oneNode ? "buffers not mapped by every peer" : "ranks on more than one host";
    }
    if (info.needsRails && !uniform)
      e.note = "uneven nodes: runs as ring";
    else if (info.needsRails && (oneNode || in.nodes.size() == static_cast<size_t>(in.nranks)))
      e.note = "one level: runs as ring";
    char item[64];
    snprintf(item, sizeof item, "%s%s %.1f%s", priced.empty() ? "" : " ", algorithmName(a), e.timeUs,
             e.applicable ? "" : " n/a");
    priced += item;
  }
  // Predictions within kTieTolerance of each other are a tie (the model is not that accurate),
  // and a tie goes to the algorithm listed earlier in the registry (algorithmTable).
  for (const AlgorithmInfo& info : algorithmTable()) {
    const int i = static_cast<int>(info.algorithm);
    const AlgorithmEstimate& e = choice.estimates[i];
    if (!e.applicable || !e.allowed) continue;
    if (best < 0 || e.timeUs < choice.estimates[best].timeUs * (1 - kTieTolerance)) best = i;
  }
  if (best < 0) {
    best = static_cast<int>(defaultAlgorithm(collective));
    source = "fallback: no allowed algorithm can run this call (" + source + ")";
    WEFT_INFO(kLogTune, "%s: %s; using %s", collectiveName(collective), source.c_str(),
              algorithmName(static_cast<Algorithm>(best)));
  }
  choice.algorithm = static_cast<Algorithm>(best);
  choice.timeUs = choice.estimates[best].timeUs;
  choice.reason = source;
  WEFT_INFO(kLogTune, "%s %zu bytes, %d ranks, %zu nodes: %s (%s), predicted %.1f us [%s]", collectiveName(collective),
            in.bytes, in.nranks, in.nodes.empty() ? size_t(1) : in.nodes.size(), algorithmName(choice.algorithm),
            source.c_str(), choice.timeUs, priced.c_str());
  *out = std::move(choice);
  return ncclSuccess;
}

ncclResult_t selectAllReduceAlgorithm(const SelectionInput& input, AlgorithmChoice* out) {
  SelectionInput allReduce = input;
  allReduce.collective = Collective::AllReduce;
  return selectAlgorithm(allReduce, out);
}

}  // namespace weft
