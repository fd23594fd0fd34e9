#include "tools/characterize/host_survey.h"

#include <unistd.h>

#include <map>
#include <sstream>
#include <stdexcept>

#include "common/json_text.h"
#include "topology/host_identity.h"
#include "topology/rank_placement.h"
#include "topology/topology_loader.h"

namespace weft::characterize {
namespace {

int packageOfNumaNode(const TopologyModel& model, int numaNode) {
  for (const NumaInfo& numa : model.numaList)
    if (numa.osIndex == numaNode) return numa.package;
  return -1;
}

// This rank's record: its site and its host's hardware, one JSON object each, separated by a
// newline (the text travels in a fixed slot).
std::string describeRank(int rank, const TopologyModel& model, RankSite* site) {
  const RankPlacement placement = describeThisRank(model, -1);
  site->hostId = hostIdentity();
  site->host = site->hostId.substr(0, site->hostId.find(':'));
  site->numaNode = placement.numaNode;
  if (site->numaNode < 0 && model.numaList.size() == 1) site->numaNode = model.numaList[0].osIndex;
  site->package = packageOfNumaNode(model, site->numaNode);
  if (site->package < 0 && model.packageList.size() == 1) site->package = model.packageList[0].osIndex;

  std::ostringstream out;
  out << "{\"rank\": " << rank << ", \"host\": " << jsonQuote(site->host)
      << ", \"host_id\": " << jsonQuote(site->hostId) << ", \"pid\": " << getpid()
      << ", \"numa_node\": " << site->numaNode << ", \"package\": " << site->package
      << ", \"cpuset\": " << jsonQuote(placement.cpuset) << ", \"nic\": " << jsonQuote(placement.nicName)
      << ", \"nic_speed_gbps\": " << jsonNumber(placement.nicSpeedGbps) << "}\n";
  uint64_t memory = 0;
  for (const NumaInfo& numa : model.numaList) memory += numa.memoryBytes;
  out << "{\"host\": " << jsonQuote(site->host) << ", \"host_id\": " << jsonQuote(site->hostId)
      << ", \"packages\": " << model.packages << ", \"numa_nodes\": " << model.numaNodes
      << ", \"cores\": " << model.cores << ", \"pus\": " << model.pus << ", \"memory_bytes\": " << memory
      << ", \"cpu_model\": " << jsonQuote(model.packageList.empty() ? "" : model.packageList[0].cpuModel)
      << ", \"gpus\": [";
  for (size_t g = 0; g < model.gpus.size(); ++g) out << (g ? ", " : "") << jsonQuote(model.gpus[g].model);
  out << "], \"nics\": [";
  for (size_t n = 0; n < model.nics.size(); ++n)
    out << (n ? ", " : "") << "{\"name\": " << jsonQuote(model.nics[n].name)
        << ", \"speed_gbps\": " << jsonNumber(model.nics[n].speedGbps) << "}";
  out << "]";  // the ranks list is added on rank 0
  return out.str();
}

RankSite parseSite(const std::string& rankJson) {
  // Only what linkClass needs, read back from the fields describeRank wrote.
  auto field = [&](const char* key) {
    const std::string tag = std::string("\"") + key + "\": ";
    size_t at = rankJson.find(tag);
    if (at == std::string::npos) throw std::runtime_error(std::string("host record without ") + key);
    return rankJson.substr(at + tag.size());
  };
  RankSite site;
  auto quoted = [](const std::string& text) { return text.substr(1, text.find('"', 1) - 1); };
  site.hostId = quoted(field("host_id"));
  site.host = quoted(field("host"));
  site.numaNode = std::stoi(field("numa_node"));
  site.package = std::stoi(field("package"));
  return site;
}

}  // namespace

HostSurvey surveyHosts(RankExchange* exchange) {
  TopologyModel model;
  if (loadTopology(&model) != ncclSuccess) throw std::runtime_error("topology: cannot discover this host");
  RankSite mine;
  const std::vector<std::string> records = exchange->allTexts(describeRank(exchange->rank(), model, &mine));
  HostSurvey survey;
  std::map<std::string, std::pair<std::string, std::vector<int>>> hosts;  // host id -> (record, ranks)
  std::vector<std::string> hostOrder;
  std::string ranks = "[";
  for (int r = 0; r < exchange->nranks(); ++r) {
    const std::string& record = records[r];
    const size_t split = record.find('\n');
    const std::string rankJson = record.substr(0, split);
    survey.sites.push_back(parseSite(rankJson));
    ranks += (r ? ",\n  " : "\n  ") + rankJson;
    auto [it, added] = hosts.try_emplace(survey.sites.back().hostId, record.substr(split + 1), std::vector<int>{});
    if (added) hostOrder.push_back(it->first);
    it->second.second.push_back(r);
  }
  survey.ranksJson = ranks + "\n]";
  std::string hostsJson = "[";
  for (size_t h = 0; h < hostOrder.size(); ++h) {
    const auto& [record, hostRanks] = hosts[hostOrder[h]];
    hostsJson += (h ? ",\n  " : "\n  ") + record + ", \"ranks\": [";
    for (size_t i = 0; i < hostRanks.size(); ++i) hostsJson += (i ? ", " : "") + std::to_string(hostRanks[i]);
    hostsJson += "]}";
  }
  survey.hostsJson = hostsJson + "\n]";
  return survey;
}

std::string linkClass(const RankSite& a, const RankSite& b) {
  if (a.hostId != b.hostId) return "across_hosts";
  if (a.numaNode >= 0 && a.numaNode == b.numaNode) return "same_numa";
  if (a.package >= 0 && b.package >= 0) return a.package == b.package ? "same_socket" : "across_sockets";
  return "same_host";
}

}  // namespace weft::characterize
