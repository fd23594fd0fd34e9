#include "runtime/exec/collective_record.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "algorithms/schedule.h"
#include "common/cycle_clock.h"
#include "common/dtype.h"
#include "common/safe_file.h"
#include "common/settings.h"
#include "common/units_text.h"

namespace weft {

std::string communicatorIdText(uint64_t commId) {
  char text[16];
  std::snprintf(text, sizeof text, "%08llx", static_cast<unsigned long long>(commId & 0xffffffffull));
  return text;
}

std::string recordDumpPath(int rank, uint64_t commId) {
  return expandFilePattern(settingString(Setting::WeftDumpFile).value_or(""), rank, communicatorIdText(commId));
}

std::vector<PeerTraffic> trafficOf(const Schedule& schedule) {
  std::vector<PeerTraffic> traffic;
  auto of = [&](int peer) -> PeerTraffic& {
    for (PeerTraffic& t : traffic)
      if (t.peer == peer) return t;
    traffic.push_back(PeerTraffic{peer, 0, 0});
    return traffic.back();
  };
  for (const Step& step : schedule.steps) {
    if (step.peer < 0) continue;
    if (step.kind == StepKind::Send) of(step.peer).sentBytes += step.src.bytes;
    if (step.kind == StepKind::Recv || step.kind == StepKind::RecvReduce) of(step.peer).receivedBytes += step.dst.bytes;
  }
  std::sort(traffic.begin(), traffic.end(), [](const PeerTraffic& a, const PeerTraffic& b) { return a.peer < b.peer; });
  return traffic;
}

CollectiveRecordRing::CollectiveRecordRing(size_t capacity) : entries_(capacity) {
  if (capacity) cycleClockCalibrate();  // once per process, here rather than in a dump
}

CollectiveRecord* CollectiveRecordRing::begin(uint64_t sequence, const char* collective, const char* algorithm,
                                              int kind, uint64_t bytes, size_t count, ncclDataType_t datatype, int op,
                                              int root, size_t steps, const std::vector<PeerTraffic>& traffic) {
  if (entries_.empty()) return nullptr;
  CollectiveRecord& r = entries_[issued_++ % entries_.size()];
  r.sequence = sequence;
  r.collective = collective;
  r.algorithm = algorithm;
  r.kind = kind;
  r.bytes = bytes;
  r.count = count;
  r.datatype = datatype;
  r.op = op;
  r.root = root;
  r.steps = steps;
  r.peerCount = traffic.size();
  r.sentBytes = r.receivedBytes = 0;
  for (size_t i = 0; i < traffic.size(); ++i) {
    if (i < CollectiveRecord::kPeersKept) r.peers[i] = traffic[i];
    r.sentBytes += traffic[i].sentBytes;
    r.receivedBytes += traffic[i].receivedBytes;
  }
  r.endStamp = 0;
  r.result = ncclSuccess;
  // r.failure is left as it was: it means something only when result says the call failed, and
  // not touching it keeps begin() to the entry's first cache lines.
  r.startStamp = cycleStamp();
  return &r;
}

CollectiveRecord* CollectiveRecordRing::end(uint64_t sequence, ncclResult_t result, const std::string& failure) {
  if (entries_.empty()) return nullptr;
  ++completed_;
  // The newest entries are the likeliest: search backwards from the last one entered.
  for (size_t back = 0; back < std::min<uint64_t>(issued_, entries_.size()); ++back) {
    CollectiveRecord& r = entries_[(issued_ - 1 - back) % entries_.size()];
    if (r.sequence != sequence || r.endStamp != 0) continue;
    r.endStamp = cycleStamp();
    r.result = result;
    if (result != ncclSuccess) r.failure = failure;
    return &r;
  }
  return nullptr;
}

std::vector<const CollectiveRecord*> CollectiveRecordRing::entries() const {
  std::vector<const CollectiveRecord*> out;
  const uint64_t held = std::min<uint64_t>(issued_, entries_.size());
  for (uint64_t k = issued_ - held; k < issued_; ++k) out.push_back(&entries_[k % entries_.size()]);
  return out;
}

std::string formatCollectiveRecords(const CollectiveRecordRing& ring, int rank, int nranks, int64_t nowNs) {
  const std::vector<const CollectiveRecord*> held = ring.entries();
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  std::string out = "# weft collective record: rank " + std::to_string(rank) + " of " + std::to_string(nranks) +
                    ", host " + host + ", pid " + std::to_string(getpid()) + "; " + std::to_string(ring.issued()) +
                    " collectives issued, " + std::to_string(ring.completed()) + " completed; the last " +
                    std::to_string(held.size()) + ", oldest first\n";
  for (const CollectiveRecord* r : held) {
    std::string line = "#" + std::to_string(r->sequence) + " " + r->collective + " " + std::to_string(r->count) +
                       " x " + dataTypeName(r->datatype);
    if (r->op >= 0) line += std::string(" ") + redOpName(static_cast<ncclRedOp_t>(r->op));
    if (r->root >= 0) line += " root " + std::to_string(r->root);
    line += ", algorithm " + std::string(r->algorithm) + ", " + std::to_string(r->steps) + " steps";
    for (size_t i = 0; i < std::min(r->peerCount, CollectiveRecord::kPeersKept); ++i)
      line += ", rank " + std::to_string(r->peers[i].peer) + " sent " + bytesText(r->peers[i].sentBytes) +
              " received " + bytesText(r->peers[i].receivedBytes);
    if (r->peerCount > CollectiveRecord::kPeersKept)
      line += ", " + std::to_string(r->peerCount) + " peers in all: sent " + bytesText(r->sentBytes) + " received " +
              bytesText(r->receivedBytes);
    const int64_t startNs = cycleStampToSteadyNs(r->startStamp);
    const int64_t endNs = r->endStamp ? cycleStampToSteadyNs(r->endStamp) : 0;
    if (r->endStamp == 0) {
      line += ": in flight for " + durationText(nowNs - startNs);
    } else if (r->result != ncclSuccess) {
      line += ": failed after " + durationText(endNs - startNs) + " (" + r->failure + ")";
    } else {
      line += ": done in " + durationText(endNs - startNs) + ", " + durationText(nowNs - endNs) + " ago";
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace weft
