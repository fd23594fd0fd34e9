#include "runtime/exec/collective_metrics.h"

#include <algorithm>
#include <cstdio>

#include "algorithms/algorithm.h"
#include "common/cycle_clock.h"
#include "common/log.h"
#include "common/safe_file.h"
#include "common/settings.h"
#include "common/status.h"
#include "runtime/exec/collective_progress.h"

namespace weft {

const char* CollectiveMetrics::kindName(int kind) {
  return kind == kPointToPointKind ? "sendrecv" : collectiveName(static_cast<Collective>(kind));
}

double CollectiveMetrics::busBandwidthGBps(int kind, int nranks, uint64_t bytes, int64_t ns) {
  if (ns <= 0) return 0;
  const double factor = kind == kPointToPointKind ? 1.0 : busBandwidthFactor(static_cast<Collective>(kind), nranks);
  return factor * static_cast<double>(bytes) / static_cast<double>(ns);  // bytes per ns: GB/s
}

std::unique_ptr<CollectiveMetrics> CollectiveMetrics::fromEnv(int rank, int nranks, uint64_t commId) {
  const std::optional<std::string> pattern = settingString(Setting::WeftMetricsFile);
  std::string path;
  if (pattern && !pattern->empty()) path = expandFilePattern(*pattern, rank, communicatorIdText(commId));
  return std::make_unique<CollectiveMetrics>(std::move(path), settingDouble(Setting::WeftMetricsInterval), rank, nranks,
                                             commId);
}

CollectiveMetrics::CollectiveMetrics(std::string path, double intervalSeconds, int rank, int nranks, uint64_t commId)
    : path_(std::move(path)),
      intervalNs_(static_cast<int64_t>(intervalSeconds * 1e9)),
      rank_(rank),
      nranks_(nranks),
      commId_(commId),
      nextWriteNs_(cycleStampToSteadyNs(cycleStamp()) + intervalNs_) {}

int CollectiveMetrics::bucketOf(uint64_t bytes) {
  if (bytes <= 1) return 0;
  return std::min(kBuckets - 1, 64 - __builtin_clzll(bytes - 1));
}

void CollectiveMetrics::add(const CollectiveRecord& r) {
  if (r.kind < 0 || r.kind >= kKinds || r.result != ncclSuccess || r.endStamp == 0) return;
  Cell& cell = cells_[r.kind][bucketOf(r.bytes)];
  singleWriterAdd<uint64_t>(cell.count, 1);
  singleWriterAdd<uint64_t>(cell.bytes, r.bytes);
  singleWriterAdd<uint64_t>(cell.ticks, r.endStamp - r.startStamp);
  if (path_.empty()) return;
  const int64_t endNs = cycleStampToSteadyNs(r.endStamp);
  if (endNs >= nextWriteNs_) {
    nextWriteNs_ = endNs + intervalNs_;
    if (write() != ncclSuccess) WEFT_WARN("WEFT_METRICS_FILE: %s", lastErrorMessage().c_str());
  }
}

std::string CollectiveMetrics::exposition() const {
  const std::string common = "comm=\"" + communicatorIdText(commId_) + "\",rank=\"" + std::to_string(rank_) +
                             "\",nranks=\"" + std::to_string(nranks_) + "\"";
  struct Family {
    const char* name;
    const char* type;
    const char* help;
  };
  const Family families[] = {
      {"weft_collectives_total", "counter", "Collectives finished, by kind and size bucket (size <= le bytes)."},
      {"weft_collective_bytes_total", "counter", "Bytes of those collectives, as nccl-tests sizes them."},
      {"weft_collective_seconds_total", "counter", "Time those collectives took on this rank."},
      {"weft_collective_busbw_gbps", "gauge", "Bus bandwidth of those collectives (nccl-tests' factors), GB/s."},
  };
  std::string out;
  for (int f = 0; f < 4; ++f) {
    out += std::string("# HELP ") + families[f].name + " " + families[f].help + "\n# TYPE " + families[f].name + " " +
           families[f].type + "\n";
    for (int kind = 0; kind < kKinds; ++kind) {
      for (int b = 0; b < kBuckets; ++b) {
        const Cell& cell = cells_[kind][b];
        const uint64_t count = cell.count.load(std::memory_order_relaxed);
        const uint64_t bytes = cell.bytes.load(std::memory_order_relaxed);
        if (count == 0) continue;
        char value[64];
        const int64_t ns = cycleTicksToNs(cell.ticks.load(std::memory_order_relaxed));
        if (f == 0) std::snprintf(value, sizeof value, "%llu", static_cast<unsigned long long>(count));
        if (f == 1) std::snprintf(value, sizeof value, "%llu", static_cast<unsigned long long>(bytes));
        if (f == 2) std::snprintf(value, sizeof value, "%.9f", static_cast<double>(ns) / 1e9);
        if (f == 3) std::snprintf(value, sizeof value, "%.6f", busBandwidthGBps(kind, nranks_, bytes, ns));
        out += std::string(families[f].name) + "{" + common + ",collective=\"" + kindName(kind) + "\",le=\"" +
               std::to_string(uint64_t{1} << b) + "\"} " + value + "\n";
      }
    }
  }
  return out;
}

ncclResult_t CollectiveMetrics::write() {
  return path_.empty() ? ncclSuccess : replaceFile(path_, exposition(), "WEFT_METRICS_FILE");
}

std::vector<CollectiveMetrics::Totals> CollectiveMetrics::totals() const {
  std::vector<Totals> out;
  for (int kind = 0; kind < kKinds; ++kind)
    for (int b = 0; b < kBuckets; ++b) {
      const Cell& cell = cells_[kind][b];
      const uint64_t count = cell.count.load(std::memory_order_relaxed);
      if (count == 0) continue;
      out.push_back(Totals{kind, b, count, cell.bytes.load(std::memory_order_relaxed),
                           cycleTicksToNs(cell.ticks.load(std::memory_order_relaxed))});
    }
  return out;
}

}  // namespace weft
