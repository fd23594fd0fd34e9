#include "algorithms/cost/cost_model.h"

#include <strings.h>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "algorithms/cost/cost_terms.h"
#include "algorithms/cost/prices.h"
#include "common/safe_file.h"
#include "common/settings.h"
#include "common/status.h"
#include "topology/topology_model.h"

namespace weft {

LinkTable::LinkTable() {
  for (int i = 0; i < static_cast<int>(LinkType::Count); ++i) {
    const LinkClassInfo& info = linkClassInfo(static_cast<LinkType>(i));
    links[i] = {info.latencyUs, info.nominalGBps};
  }
}

LinkTable linkTableFromTopology(const TopologyModel* model) {
  LinkTable table;
  if (!model) return table;
  double nicGBps = 0;
  int nics = 0;
  for (const NicInfo& nic : model->nics) {
    ++nics;
    nicGBps = std::max(nicGBps, nic.speedGbps / 8.0);
  }
  if (nicGBps > 0) table[LinkType::Network].bandwidthGBps = nicGBps;
  if (nics > 0) table.nicsPerNode = nics;
  double nvlink = 0;
  for (const GpuInfo& gpu : model->gpus) nvlink = std::max(nvlink, gpu.nvlinkGBps);
  if (nvlink > 0) table[LinkType::NVLink].bandwidthGBps = nvlink;
  return table;
}

namespace {

bool parsePositive(const std::string& word, double* value) {
  char* end = nullptr;
  double v = std::strtod(word.c_str(), &end);
  if (word.empty() || *end != '\0' || !(v > 0) || !std::isfinite(v)) return false;
  *value = v;
  return true;
}

bool parseLinkClass(const std::string& word, LinkType* type) {
  for (int i = 0; i < static_cast<int>(LinkType::Count); ++i)
    if (strcasecmp(word.c_str(), linkTypeName(static_cast<LinkType>(i))) == 0) {
      *type = static_cast<LinkType>(i);
      return true;
    }
  return false;
}

// "NVLink, PCIe, ...": every class a tuning file may name, for its errors.
std::string linkClassNames() {
  std::string names;
  for (int i = 0; i < static_cast<int>(LinkType::Count); ++i)
    names += std::string(i ? ", " : "") + linkTypeName(static_cast<LinkType>(i));
  return names;
}

}  // namespace

// More NICs than any host has; also keeps the conversion to int defined (found by fuzzing).
constexpr int kMaxNicsPerNode = 1024;

ncclResult_t applyTuningText(const std::string& text, const std::string& origin, LinkTable* table) {
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  LinkTable result = *table;
  while (std::getline(lines, line)) {
    ++number;
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string word; words >> word;) w.push_back(word);
    if (w.empty()) continue;
    if (w[0] == "link") {
      LinkType type;
      if (w.size() < 2 || !parseLinkClass(w[1], &type))
        return fail(ncclInvalidArgument, "%s:%d: 'link' needs a link class (%s), got '%s'", origin.c_str(), number,
                    linkClassNames().c_str(), w.size() < 2 ? "" : w[1].c_str());
      if (w.size() < 4 || w.size() % 2 != 0)
        return fail(ncclInvalidArgument, "%s:%d: expected 'link %s latency_us <x> bandwidth_GBps <y>'", origin.c_str(),
                    number, w[1].c_str());
      for (size_t i = 2; i + 1 < w.size(); i += 2) {
        double value;
        if (!parsePositive(w[i + 1], &value))
          return fail(ncclInvalidArgument, "%s:%d: '%s' is not a positive number (for %s)", origin.c_str(), number,
                      w[i + 1].c_str(), w[i].c_str());
        if (w[i] == "latency_us") {
          result[type].latencyUs = value;
          result.tunedMask |= LinkTable::latencyBit(type);
        } else if (w[i] == "bandwidth_GBps") {
          result[type].bandwidthGBps = value;
          result.tunedMask |= LinkTable::bandwidthBit(type);
        } else {
          return fail(ncclInvalidArgument, "%s:%d: unknown key '%s' (expected latency_us or bandwidth_GBps)",
                      origin.c_str(), number, w[i].c_str());
        }
      }
    } else if (w[0] == "nics_per_node") {
      double value;
      if (w.size() != 2 || !parsePositive(w[1], &value) || value != std::floor(value) || value > kMaxNicsPerNode)
        return fail(ncclInvalidArgument, "%s:%d: expected 'nics_per_node <integer from 1 to %d>'", origin.c_str(),
                    number, kMaxNicsPerNode);
      result.nicsPerNode = static_cast<int>(value);
      result.tunedMask |= LinkTable::kNicsBit;
    } else {
      return fail(ncclInvalidArgument, "%s:%d: unknown directive '%s' (expected 'link' or 'nics_per_node')",
                  origin.c_str(), number, w[0].c_str());
    }
  }
  *table = result;
  return ncclSuccess;
}

// A tuning file is a few dozen lines; a larger one is a mistake (or /dev/zero).
constexpr size_t kMaxTuningFileBytes = 1u << 20;

ncclResult_t applyTuningFile(const std::string& path, LinkTable* table) {
  std::string text;
  WEFT_CHECK(readRegularFile(path, kMaxTuningFileBytes, "tuning file (WEFT_TUNING_FILE)", &text));
  return applyTuningText(text, path, table);
}

ncclResult_t linkTableFromEnv(const TopologyModel* model, LinkTable* table) {
  *table = linkTableFromTopology(model);
  if (auto path = settingString(Setting::WeftTuningFile); path && !path->empty()) return applyTuningFile(*path, table);
  return ncclSuccess;
}

LinkTable slowestLinkTable(const std::vector<LinkTable>& tables) {
  if (tables.empty()) return LinkTable();
  LinkTable slowest = tables.front();
  for (const LinkTable& table : tables) {
    for (size_t i = 0; i < slowest.links.size(); ++i) {
      slowest.links[i].latencyUs = std::max(slowest.links[i].latencyUs, table.links[i].latencyUs);
      slowest.links[i].bandwidthGBps = std::min(slowest.links[i].bandwidthGBps, table.links[i].bandwidthGBps);
    }
    slowest.nicsPerNode = std::min(slowest.nicsPerNode, table.nicsPerNode);
  }
  slowest.tunedMask = 0;
  return slowest;
}

LinkTable agreedLinkTable(const std::vector<LinkTable>& tables) {
  LinkTable agreed = slowestLinkTable(tables);
  if (tables.empty()) return agreed;
  const LinkTable& rankZero = tables.front();
  for (size_t i = 0; i < agreed.links.size(); ++i) {
    const auto type = static_cast<LinkType>(i);
    if (rankZero.tunedMask & LinkTable::latencyBit(type)) agreed.links[i].latencyUs = rankZero.links[i].latencyUs;
    if (rankZero.tunedMask & LinkTable::bandwidthBit(type))
      agreed.links[i].bandwidthGBps = rankZero.links[i].bandwidthGBps;
  }
  if (rankZero.tunedMask & LinkTable::kNicsBit) agreed.nicsPerNode = rankZero.nicsPerNode;
  agreed.tunedMask = rankZero.tunedMask;
  return agreed;
}

CostModel costModelFromLinks(const LinkTable& table, IntraNodeMedium medium, const TopologyModel* model) {
  if (medium == IntraNodeMedium::Auto) {
    medium = IntraNodeMedium::Memory;
    if (model && !model->gpus.empty()) {
      medium = IntraNodeMedium::PCIe;
      for (const GpuInfo& gpu : model->gpus)
        if (gpu.nvlinkGBps > 0) medium = IntraNodeMedium::NVLink;
    }
  }
  CostModel cost;
  switch (medium) {
    case IntraNodeMedium::NVLink: cost.intra = table[LinkType::NVLink]; break;
    case IntraNodeMedium::PCIe: cost.intra = table[LinkType::PCIe]; break;
    case IntraNodeMedium::Loopback: cost.intra = table[LinkType::Loopback]; break;
    default:
      // Through a shared-memory slot: copied in by the sender and out by the receiver.
      cost.intra = table[LinkType::Memory];
      cost.intra.bandwidthGBps /= 2;
      break;
  }
  cost.nic = table[LinkType::Network];
  cost.nicsPerNode = std::max(1, table.nicsPerNode);
  cost.memory = table[LinkType::Memory];
  return cost;
}

int CostModel::ringChannels(int ranksPerNode, int nodes, double bytes) const {
  int channels = nodes > 1 ? std::max(1, std::min(nicsPerNode, ranksPerNode)) : 1;
  channels = std::max(minChannels, std::min(maxChannels, channels));
  const double bySize = std::max(1.0, std::floor(bytes / kMinChannelBytes));
  return static_cast<int>(std::min<double>(channels, bySize));
}

int CostModel::ringChannels(const std::vector<std::vector<int>>& nodes, double bytes) const {
  size_t smallest = nodes.empty() ? 1 : nodes.front().size();
  for (const auto& node : nodes) smallest = std::min(smallest, node.size());
  return ringChannels(static_cast<int>(smallest), std::max(1, static_cast<int>(nodes.size())), bytes);
}

CostInput costInputFor(size_t bytes, int nranks, const std::vector<std::vector<int>>& nodes) {
  CostInput input{bytes, nranks, {}};
  for (const auto& node : nodes) input.nodeSizes.push_back(static_cast<int>(node.size()));
  return input;
}

void applyChannelEnv(CostModel* model) {
  const int64_t low = settingIntIfSet(Setting::NcclMinNchannels).value_or(model->minChannels);
  const int64_t high = settingIntIfSet(Setting::NcclMaxNchannels).value_or(model->maxChannels);
  model->maxChannels = static_cast<int>(std::clamp<int64_t>(high, 1, 64));
  model->minChannels = static_cast<int>(std::clamp<int64_t>(low, 1, model->maxChannels));
}

LinkCost CostModel::interPerRank(int ranksPerNode) const {
  LinkCost link = nic;
  int sharing = std::max(1, ranksPerNode);
  link.bandwidthGBps = nic.bandwidthGBps * std::min(nicsPerNode, sharing) / sharing;
  return link;
}

namespace cost {

Shape shapeOf(const CostInput& input) {
  Shape s{static_cast<double>(input.bytes), std::max(1, input.nranks), 1, std::max(1, input.nranks), true};
  if (!input.nodeSizes.empty()) {
    s.nodes = static_cast<int>(input.nodeSizes.size());
    s.local = *std::min_element(input.nodeSizes.begin(), input.nodeSizes.end());
    s.uniform = s.local == *std::max_element(input.nodeSizes.begin(), input.nodeSizes.end());
    s.local = std::max(1, s.local);
  }
  return s;
}

double ringStepUs(const Shape& s, const CostModel& m, double piece) {
  if (s.nodes > 1 && s.local == 1) return m.nic.timeUs(piece);
  double step = m.intra.timeUs(piece);
  // Each of the C channels crosses a node boundary through its own NIC with a C-th of the piece.
  if (s.nodes > 1) step = std::max(step, m.nic.timeUs(piece / m.ringChannels(s.local, s.nodes, s.bytes)));
  return step;
}

std::vector<int> nodeOfPositions(const CostInput& input, int n) {
  std::vector<int> nodeOf(n, 0);
  int position = 0;
  for (size_t k = 0; k < input.nodeSizes.size(); ++k)
    for (int i = 0; i < input.nodeSizes[k] && position < n; ++i) nodeOf[position++] = static_cast<int>(k);
  return nodeOf;
}

bool exchangeCrossesNodes(const std::vector<int>& nodeOf, const PowerOfTwoFold& fold, int mask) {
  for (int v = 0; v < fold.pw; ++v)
    if (nodeOf[fold.actingPosition(v)] != nodeOf[fold.actingPosition(v ^ mask)]) return true;
  return false;
}

bool foldCrossesNodes(const std::vector<int>& nodeOf, const PowerOfTwoFold& fold) {
  for (int v = 0; v < fold.extra; ++v)
    if (nodeOf[2 * v] != nodeOf[2 * v + 1]) return true;
  return false;
}

}  // namespace cost

namespace {

int log2Floor(int n) {
  int k = 0;
  while ((2 << k) <= n) ++k;
  return k;
}
int log2Ceil(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

}  // namespace

namespace cost {

double ringAllReduceUs(const Shape& s, const CostInput&, const CostModel& m) {
  if (s.n == 1) return m.memory.timeUs(s.bytes);
  return 2.0 * (s.n - 1) * ringStepUs(s, m, s.bytes / s.n);
}

double treeAllReduceUs(const Shape& s, const CostInput&, const CostModel& m) {
  if (s.n == 1) return m.memory.timeUs(s.bytes);
  int depth = log2Floor(s.n - 1) + 1;  // the depth of NCCL's binary tree (see tree_allreduce.h)
  int interHops = s.nodes > 1 ? std::min(depth, log2Ceil(s.nodes)) : 0;
  int intraHops = depth - interHops;
  if (s.local == 1) intraHops = 0, interHops = depth;
  // Crossing edges of the two trees leave a node from a few ranks at once: about two flows
  // share the node's NICs.
  LinkCost inter = m.nic;
  inter.bandwidthGBps *= std::min(1.0, m.nicsPerNode / 2.0);
  double bandwidth = interHops > 0 ? std::min(m.intra.bandwidthGBps, inter.bandwidthGBps) : m.intra.bandwidthGBps;
  double alpha = intraHops * m.intra.latencyUs + interHops * inter.latencyUs;
  double slice = std::min(static_cast<double>(m.sliceBytes), s.bytes / 2);
  // Up and down: the latency of the path twice, one slice filling the pipeline at each hop,
  // then the stream. Every rank receives S in the reduction and S in the broadcast, mostly
  // from ranks of its own node. An edge that crosses nodes belongs to one tree and carries that
  // tree's S/2 in each phase; with one level of crossing edges (two nodes) a rank has at most
  // one of them, with more levels a rank can be the crossing parent in one tree and the
  // crossing child in the other, and its NIC carries all of its S.
  double stream = 2.0 * s.bytes / (m.intra.bandwidthGBps * 1e3);
  const double crossingShare = std::min(2, interHops) / 2.0;  // of S, per phase
  if (interHops > 0) stream = std::max(stream, 2.0 * crossingShare * s.bytes / (inter.bandwidthGBps * 1e3));
  return 2.0 * (alpha + depth * slice / (bandwidth * 1e3)) + stream;
}

double rhdAllReduceUs(const Shape& s, const CostInput& input, const CostModel& m) {
  if (s.n == 1) return m.memory.timeUs(s.bytes);
  // An exchange step is as slow as its slowest pair: inter-node when any pair of partners is on
  // different nodes. The fold of a non-power of two stretches distances.
  const std::vector<int> nodeOf = nodeOfPositions(input, s.n);
  const PowerOfTwoFold fold(s.n);
  const LinkCost inter = m.interPerRank(s.local);
  double t = 0, piece = s.bytes;
  for (int mask = 1; mask < fold.pw; mask <<= 1) {
    piece /= 2;
    t += 2.0 * (exchangeCrossesNodes(nodeOf, fold, mask) ? inter : m.intra).timeUs(piece);  // halving, doubling
  }
  if (fold.extra > 0)  // the folded ranks' hand-over and hand-back of the whole buffer
    t += 2.0 * (foldCrossesNodes(nodeOf, fold) ? inter : m.intra).timeUs(s.bytes);
  return t;
}

double doublingAllReduceUs(const Shape& s, const CostInput& input, const CostModel& m) {
  if (s.n == 1) return m.memory.timeUs(s.bytes);
  // As rhd's exchanges, but each moves the whole buffer; and each reduces the whole buffer,
  // where the other algorithms reduce (n-1)/n of it in all: that surplus costs memory time
  // (a 2 MiB shm all-reduce of 2 ranks: 127 us against the ring's 110).
  const std::vector<int> nodeOf = nodeOfPositions(input, s.n);
  const PowerOfTwoFold fold(s.n);
  const LinkCost inter = m.interPerRank(s.local);
  double t = 0;
  int reductions = 0;
  for (int mask = 1; mask < fold.pw; mask <<= 1, ++reductions)
    t += (exchangeCrossesNodes(nodeOf, fold, mask) ? inter : m.intra).timeUs(s.bytes);
  if (fold.extra > 0) {
    t += 2.0 * (foldCrossesNodes(nodeOf, fold) ? inter : m.intra).timeUs(s.bytes);
    ++reductions;
  }
  const double surplus = reductions - (s.n - 1.0) / s.n;
  return t + surplus * s.bytes / (m.memory.bandwidthGBps * 1e3);
}

double hierAllReduceUs(const Shape& s, const CostInput& input, const CostModel& m) {
  if (!hasRails(s)) return ringAllReduceUs(s, input, m);
  double intra = 2.0 * (s.local - 1) * m.intra.timeUs(s.bytes / s.local);
  double inter =
      2.0 * (s.nodes - 1) * m.interPerRank(s.local).timeUs(s.bytes / (static_cast<double>(s.local) * s.nodes));
  return intra + inter;
}

double directAllReduceUs(const Shape& s, const CostInput&, const CostModel& m) {
  if (s.n == 1) return m.memory.timeUs(s.bytes);
  // One barrier; each rank reads S (its chunk of every rank's buffer) and writes S (its result
  // into every rank's), the traffic of one copy of S.
  return m.intra.latencyUs + m.memory.timeUs(s.bytes);
}

}  // namespace cost

double allReduceLowerBoundUs(const CostInput& input, const CostModel& model) {
  const cost::Shape s = cost::shapeOf(input);
  if (s.n == 1) return 0;
  // Every rank must receive 2(n-1)/n of S over its own link, and every node 2(N-1)/N of S
  // over its NICs.
  double bound = 2.0 * (s.n - 1) / s.n * s.bytes / (model.intra.bandwidthGBps * 1e3);
  if (s.nodes > 1) {
    double nodeGBps = model.nic.bandwidthGBps * std::min(model.nicsPerNode, s.local);
    bound = std::max(bound, 2.0 * (s.nodes - 1) / s.nodes * s.bytes / (nodeGBps * 1e3));
    if (s.local == 1) bound = 2.0 * (s.n - 1) / s.n * s.bytes / (model.nic.bandwidthGBps * 1e3);
  }
  return bound;
}

double allReduceBusBandwidthGBps(size_t bytes, int nranks, double us) {
  if (us <= 0 || nranks <= 1) return 0;
  return 2.0 * (nranks - 1) / nranks * static_cast<double>(bytes) / (us * 1e3);
}

}  // namespace weft
