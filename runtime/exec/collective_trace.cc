#include "runtime/exec/collective_trace.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/cycle_clock.h"
#include "common/dtype.h"
#include "common/json_text.h"
#include "common/safe_file.h"
#include "common/settings.h"

namespace weft {
namespace {

struct TraceState {
  std::mutex mutex;
  std::optional<std::string> path;                    // WEFT_TRACE, expanded; empty optional: tracing off
  std::string events;                                 // comma-separated trace events
  std::string tracks;                                 // the tracks' name events
  std::vector<std::pair<int, uint64_t>> namedTracks;  // (rank, communicator) already named
  int64_t wallMinusSteadyNs = 0;                      // steady clock + this = wall clock
};

TraceState& state() {
  static TraceState* s = [] {
    auto* t = new TraceState;  // never destroyed: ranks may finish after static destructors ran
    if (std::optional<std::string> pattern = settingString(Setting::WeftTrace); pattern && !pattern->empty())
      t->path = expandFilePattern(*pattern);
    const int64_t wall =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    t->wallMinusSteadyNs = wall - cycleStampToSteadyNs(cycleStamp());
    return t;
  }();
  return *s;
}

std::string microseconds(int64_t ns) { return jsonNumber(static_cast<double>(ns) / 1e3, "%.3f"); }

}  // namespace

bool collectiveTraceEnabled() { return state().path.has_value(); }

void traceCollective(const CollectiveRecord& r, int rank, int nranks, uint64_t commId) {
  TraceState& s = state();
  if (!s.path) return;
  const std::string commName = "comm " + communicatorIdText(commId) + " (" + std::to_string(nranks) + " ranks)";
  const unsigned tid = static_cast<unsigned>(commId & 0x7fffffff);
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
  std::string event = "{\"name\":" + jsonQuote(r.collective) +
                      ",\"cat\":\"collective\",\"ph\":\"X\",\"ts\":" + microseconds(startNs + s.wallMinusSteadyNs) +
                      ",\"dur\":" + microseconds(endNs - startNs) + ",\"pid\":" + std::to_string(rank) +
                      ",\"tid\":" + std::to_string(tid) + ",\"args\":{" + args + "}}";
  std::lock_guard<std::mutex> lock(s.mutex);
  if (std::find(s.namedTracks.begin(), s.namedTracks.end(), std::make_pair(rank, commId)) == s.namedTracks.end()) {
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    s.namedTracks.emplace_back(rank, commId);
    s.tracks += (s.tracks.empty() ? "" : ",") + std::string("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":") +
                std::to_string(rank) + ",\"args\":{\"name\":" +
                jsonQuote("rank " + std::to_string(rank) + " (" + host + ", pid " + std::to_string(getpid()) + ")") +
                "}},{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + std::to_string(rank) +
                ",\"tid\":" + std::to_string(tid) + ",\"args\":{\"name\":" + jsonQuote(commName) + "}}";
  }
  if (!s.events.empty()) s.events += ",\n";
  s.events += event;
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
