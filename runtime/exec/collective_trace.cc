#include "runtime/exec/collective_trace.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "algorithms/schedule.h"
#include "common/cycle_clock.h"
#include "common/dtype.h"
#include "common/json_text.h"
#include "common/safe_file.h"
#include "common/settings.h"

namespace weft {
namespace {

// Times count from this wall-clock instant (Unix time 1.7e9 s, 2023-11-14 22:13:20 UTC), not
// from 1970: JSON parsers read "ts" as a double, whose 53 bits then keep 20 ns at microsecond
// magnitudes of today, against 250 ns from 1970 -- too coarse for a step's span.
constexpr int64_t kTraceEpochNs = 1700000000LL * 1000000000LL;

struct TraceState {
  std::mutex mutex;
  std::optional<std::string> path;                          // WEFT_TRACE, expanded; empty optional: tracing off
  std::string events;                                       // comma-separated trace events
  std::string tracks;                                       // the tracks' name events
  std::vector<std::tuple<int, uint64_t, int>> namedTracks;  // (rank, communicator, peer) named; peer -2: calls
  int64_t wallMinusSteadyNs = 0;                            // steady clock + this = wall clock - kTraceEpochNs
};

TraceState& state() {
  static TraceState* s = [] {
    auto* t = new TraceState;  // never destroyed: ranks may finish after static destructors ran
    if (std::optional<std::string> pattern = settingString(Setting::WeftTrace); pattern && !pattern->empty())
      t->path = expandFilePattern(*pattern);
    const int64_t wall =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    t->wallMinusSteadyNs = wall - kTraceEpochNs - cycleStampToSteadyNs(cycleStamp());
    return t;
  }();
  return *s;
}

std::string microseconds(int64_t ns) { return jsonNumber(static_cast<double>(ns) / 1e3, "%.3f"); }

constexpr int kCallsTrack = -2;  // the collectives' own track; -1: steps with no peer

// A thread id for a communicator's track of `peer` (kCallsTrack: the calls).
unsigned trackId(uint64_t commId, int peer) {
  const unsigned base = static_cast<unsigned>(commId & 0x7fffffff);
  return peer == kCallsTrack ? base : (base ^ (static_cast<unsigned>(peer + 2) * 0x9e3779b1u)) & 0x7fffffff;
}

// The name events of rank `rank`'s process track and of the communicator's `peer` track, the
// first time they are used (with the lock held).
void nameTrack(TraceState& s, int rank, int nranks, uint64_t commId, const TraceClock& clock, int peer) {
  const auto key = std::make_tuple(rank, commId, peer);
  if (std::find(s.namedTracks.begin(), s.namedTracks.end(), key) != s.namedTracks.end()) return;
  const bool processNamed =
      std::any_of(s.namedTracks.begin(), s.namedTracks.end(), [&](const auto& t) { return std::get<0>(t) == rank; });
  s.namedTracks.push_back(key);
  if (!processNamed) {
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    s.tracks += (s.tracks.empty() ? "" : ",") + std::string("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":") +
                std::to_string(rank) + ",\"args\":{\"name\":" +
                jsonQuote("rank " + std::to_string(rank) + " (" + host + ", pid " + std::to_string(getpid()) + ")") +
                ",\"clock_offset_to_rank0_us\":" + microseconds(clock.offsetNs) +
                ",\"clock_round_trip_us\":" + microseconds(clock.roundTripNs) + "}}";
  }
  std::string name = "comm " + communicatorIdText(commId) + " (" + std::to_string(nranks) + " ranks)";
  if (peer == -1) name += ": local steps";
  if (peer >= 0) name += ": steps with rank " + std::to_string(peer);
  s.tracks += (s.tracks.empty() ? "" : ",") + std::string("{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":") +
              std::to_string(rank) + ",\"tid\":" + std::to_string(trackId(commId, peer)) +
              ",\"args\":{\"name\":" + jsonQuote(name) + "}}";
}

// The spans of a traced run's steps (those it reached), one track per peer.
std::string stepEvents(const Schedule& schedule, const uint64_t* stamps, const CollectiveRecord& r, int rank,
                       uint64_t commId, int64_t wallMinusSteadyNs, std::vector<int>* peers) {
  std::string events;
  for (size_t i = 0; i < schedule.steps.size(); ++i) {
    const Step& step = schedule.steps[i];
    if (stamps[2 * i] == 0) continue;  // never started (the call failed first)
    const uint64_t end = stamps[2 * i + 1] ? stamps[2 * i + 1] : r.endStamp;
    const int64_t startNs = cycleStampToSteadyNs(stamps[2 * i]), endNs = cycleStampToSteadyNs(end);
    std::string name = stepKindName(step.kind);
    if (step.peer >= 0) name += (sendsToPeer(step) ? " to " : " from ") + std::to_string(step.peer);
    const int peer = step.peer >= 0 ? step.peer : -1;
    if (std::find(peers->begin(), peers->end(), peer) == peers->end()) peers->push_back(peer);
    const uint64_t bytes = std::max(step.src.bytes, step.dst.bytes);
    events += ",\n{\"name\":" + jsonQuote(name) +
              ",\"cat\":\"step\",\"ph\":\"X\",\"ts\":" + microseconds(startNs + wallMinusSteadyNs) +
              ",\"dur\":" + microseconds(endNs - startNs) + ",\"pid\":" + std::to_string(rank) +
              ",\"tid\":" + std::to_string(trackId(commId, peer)) +
              ",\"args\":{\"sequence\":" + std::to_string(r.sequence) + ",\"step\":" + std::to_string(i) +
              ",\"bytes\":" + std::to_string(bytes) + (stamps[2 * i + 1] ? "" : ",\"unfinished\":true") + "}}";
  }
  return events;
}

}  // namespace

bool collectiveTraceEnabled() { return state().path.has_value(); }

void traceCollective(const CollectiveRecord& r, int rank, int nranks, uint64_t commId, const TraceClock& clock,
                     const Schedule* schedule, const uint64_t* stepStamps) {
  TraceState& s = state();
  if (!s.path) return;
  const int64_t toRankZeroWall = s.wallMinusSteadyNs + clock.offsetNs;
  const int64_t startNs = cycleStampToSteadyNs(r.startStamp), endNs = cycleStampToSteadyNs(r.endStamp);
  std::string args = "\"sequence\":" + std::to_string(r.sequence) + ",\"count\":" + std::to_string(r.count) +
                     ",\"datatype\":" + jsonQuote(dataTypeName(r.datatype)) +
                     ",\"algorithm\":" + jsonQuote(r.algorithm) + ",\"steps\":" + std::to_string(r.steps);
  if (r.op >= 0) args += ",\"op\":" + jsonQuote(redOpName(static_cast<ncclRedOp_t>(r.op)));
  if (r.root >= 0) args += ",\"root\":" + std::to_string(r.root);
  args += ",\"sent_bytes\":" + std::to_string(r.sentBytes) + ",\"received_bytes\":" + std::to_string(r.receivedBytes);
  if (r.peerCount) {
    args += ",\"peers\":{";
    for (size_t i = 0; i < std::min(r.peerCount, CollectiveRecord::kPeersKept); ++i) {
      const PeerTraffic& t = r.peers[i];
      args += (i ? "," : "") + jsonQuote(std::to_string(t.peer)) + ":{\"sent\":" + std::to_string(t.sentBytes) +
              ",\"received\":" + std::to_string(t.receivedBytes) + "}";
    }
    args += "}";
  }
  if (r.result != ncclSuccess) args += ",\"error\":" + jsonQuote(r.failure);
  std::string events = "{\"name\":" + jsonQuote(r.collective) +
                       ",\"cat\":\"collective\",\"ph\":\"X\",\"ts\":" + microseconds(startNs + toRankZeroWall) +
                       ",\"dur\":" + microseconds(endNs - startNs) + ",\"pid\":" + std::to_string(rank) +
                       ",\"tid\":" + std::to_string(trackId(commId, kCallsTrack)) + ",\"args\":{" + args + "}}";
  std::vector<int> peers;
  if (schedule && stepStamps) events += stepEvents(*schedule, stepStamps, r, rank, commId, toRankZeroWall, &peers);
  std::lock_guard<std::mutex> lock(s.mutex);
  nameTrack(s, rank, nranks, commId, clock, kCallsTrack);
  for (int peer : peers) nameTrack(s, rank, nranks, commId, clock, peer);
  if (!s.events.empty()) s.events += ",\n";
  s.events += events;
}

ncclResult_t flushCollectiveTrace() {
  TraceState& s = state();
  if (!s.path) return ncclSuccess;
  std::lock_guard<std::mutex> lock(s.mutex);
  std::string text = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n" + s.tracks;
  if (!s.tracks.empty() && !s.events.empty()) text += ",\n";
  text += s.events + "\n]}\n";
  return replaceFile(*s.path, text, "WEFT_TRACE file");
}

}  // namespace weft
