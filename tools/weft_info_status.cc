// weft-info status: where the communicators of this host's weft processes stand, and which rank
// holds each one up (runtime/status: the status server in every weft process, the client, the
// culprit rule). See docs/observability.md.
#include "tools/weft_info_status.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "common/json_text.h"
#include "common/units_text.h"
#include "runtime/exec/collective_metrics.h"
#include "runtime/status/job_diagnosis.h"
#include "runtime/status/status_client.h"

namespace weft {

namespace {

struct StatusOptions {
  std::vector<int> pids;  // empty: every weft process found
  bool json = false, stats = false, dump = false;
  double timeoutSeconds = 1.0;
};

void statusUsage(FILE* to) {
  std::fprintf(
      to,
      "usage: weft-info status [PID ...] [--json] [--stats] [--dump] [--timeout SECONDS]\n"
      "  every communicator of the weft processes on this host (or of PID's communicators), each rank's\n"
      "  last issued and completed collective and what it waits for, and the rank holding the others up.\n"
      "  --stats: each rank's counts, bytes, time and bus bandwidth by collective and size.\n"
      "  --dump: every rank writes its collective record to WEFT_DUMP_FILE (as it waits, or at its next call).\n"
      "  --timeout: how long a process may take to answer (default 1 s); a silent one is named.\n");
}

int parseStatusArguments(int argc, char** argv, StatusOptions* o) {
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json") {
      o->json = true;
    } else if (a == "--stats") {
      o->stats = true;
    } else if (a == "--dump") {
      o->dump = true;
    } else if (a == "--timeout" && i + 1 < argc) {
      char* end = nullptr;
      o->timeoutSeconds = std::strtod(argv[++i], &end);
      if (*end || !(o->timeoutSeconds > 0 && o->timeoutSeconds <= 600)) {
        std::fprintf(stderr, "weft-info status: --timeout wants seconds in (0, 600], not '%s'\n", argv[i]);
        return 2;
      }
    } else if (a == "-h" || a == "--help") {
      statusUsage(stdout);
      return 0;
    } else {
      char* end = nullptr;
      const long pid = std::strtol(a.c_str(), &end, 10);
      if (a.empty() || *end || pid <= 0 || pid > INT32_MAX) {
        std::fprintf(stderr, "weft-info status: unexpected argument '%s'\n", a.c_str());
        statusUsage(stderr);
        return 2;
      }
      o->pids.push_back(static_cast<int>(pid));
    }
  }
  return -1;
}

bool validKind(int kind) { return kind >= 0 && kind < CollectiveMetrics::kKinds; }

// Asks `pids`, then the pids of their communicators' ranks on this host that were not asked
// yet (so that one PID brings in its whole job), then, through one process of each
// communicator, its ranks on other hosts; returns every reply, and in *localHosts the hosts of
// this host's answers (before the other hosts' came in).
std::vector<StatusReply> gather(std::vector<int> pids, const StatusOptions& o, std::set<std::string>* localHosts) {
  const std::string request = o.dump ? "dump" : o.stats ? "status stats" : "status";
  std::vector<StatusReply> replies;
  std::set<int> asked;
  for (int round = 0; round < 2 && !pids.empty(); ++round) {
    for (int pid : pids) asked.insert(pid);
    std::vector<StatusReply> more = askStatusServers(pids, request, o.timeoutSeconds);
    replies.insert(replies.end(), more.begin(), more.end());
    pids.clear();
    *localHosts = answeringHosts(replies);
    for (const StatusReply& r : replies)
      for (const RankStatus& c : r.communicators)
        for (const RankStatus::Member& m : c.members)
          if (localHosts->count(m.host) && !asked.count(m.pid) && m.pid > 0) {
            asked.insert(m.pid);
            pids.push_back(m.pid);
          }
  }
  std::set<std::string> throughOne;
  const size_t local = replies.size();
  for (size_t i = 0; i < local; ++i)
    for (const RankStatus& c : replies[i].communicators) {
      const bool elsewhere = std::any_of(c.members.begin(), c.members.end(),
                                         [&](const RankStatus::Member& m) { return !localHosts->count(m.host); });
      if (!elsewhere || !throughOne.insert(c.commId).second) continue;
      // The process waits up to 1 s for the other hosts (kRemoteTimeoutSeconds) before it answers.
      std::vector<StatusReply> remote =
          askStatusServers({replies[i].pid}, "job " + request + " " + c.commId, o.timeoutSeconds + 1.5);
      replies.insert(replies.end(), remote.begin(), remote.end());
    }
  return replies;
}

void printText(const std::vector<CommunicatorView>& views, const std::vector<StatusReply>& replies,
               const StatusOptions& o) {
  for (const CommunicatorView& view : views) {
    std::printf("communicator %s, %d ranks\n", view.commId.c_str(), view.nranks);
    for (int r = 0; r < view.nranks; ++r) {
      std::printf("  %s: ", rankName(view, r).c_str());
      if (view.ranks[r])
        std::printf("%llu issued, %llu completed; ", static_cast<unsigned long long>(view.ranks[r]->issued),
                    static_cast<unsigned long long>(view.ranks[r]->completed));
      std::printf("%s\n", rankSummary(view, r).c_str());
    }
    std::printf("  culprit: %s\n", diagnose(view).c_str());
    if (!o.stats) continue;
    for (int r = 0; r < view.nranks; ++r) {
      if (!view.ranks[r] || view.ranks[r]->stats.empty()) continue;
      std::printf("  statistics of rank %d:\n    %-14s %12s %10s %12s %12s %12s\n", r, "collective", "size <=", "count",
                  "bytes", "time", "busbw GB/s");
      for (const RankStatus::Stat& st : view.ranks[r]->stats) {
        if (!validKind(st.kind)) continue;
        std::printf("    %-14s %12s %10llu %12s %12s %12.3f\n", CollectiveMetrics::kindName(st.kind),
                    bytesText(uint64_t{1} << std::min(st.bucket, 62)).c_str(),
                    static_cast<unsigned long long>(st.count), bytesText(st.bytes).c_str(), durationText(st.ns).c_str(),
                    CollectiveMetrics::busBandwidthGBps(st.kind, view.nranks, st.bytes, st.ns));
      }
    }
  }
  if (views.empty()) std::printf("no weft communicator found on this host\n");
  for (const StatusReply& r : replies)
    if (!r.answered && std::none_of(views.begin(), views.end(), [&](const CommunicatorView& v) {
          return std::any_of(v.members.begin(), v.members.end(),
                             [&](const RankStatus::Member& m) { return m.pid == r.pid; });
        }))
      std::printf("process %d did not answer: %s\n", r.pid, r.error.c_str());
}

std::string jsonNumber(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6f", v);
  return text;
}

void printJson(const std::vector<CommunicatorView>& views) {
  std::string out = "{\"communicators\": [";
  for (size_t k = 0; k < views.size(); ++k) {
    const CommunicatorView& view = views[k];
    out += std::string(k ? ", " : "") + "{\"id\": " + jsonQuote(view.commId) +
           ", \"nranks\": " + std::to_string(view.nranks) + ", \"culprit\": " + jsonQuote(diagnose(view)) +
           ", \"ranks\": [";
    for (int r = 0; r < view.nranks; ++r) {
      const RankStatus::Member& m = view.members[r];
      out += std::string(r ? ", " : "") + "{\"rank\": " + std::to_string(r) +
             ", \"host\": " + jsonQuote(shortHostName(m.host)) + ", \"pid\": " + std::to_string(m.pid) +
             ", \"answered\": " + (view.ranks[r] ? "true" : "false");
      if (!view.ranks[r]) {
        out += std::string(", \"dead\": ") + (view.dead[r] ? "true" : "false") +
               ", \"silence\": " + jsonQuote(view.silence[r]) + "}";
        continue;
      }
      const RankStatus& s = *view.ranks[r];
      out += ", \"issued\": " + std::to_string(s.issued) + ", \"completed\": " + std::to_string(s.completed);
      out += ", \"in_flight\": ";
      out += s.inFlight ? "{\"sequence\": " + std::to_string(s.inFlightSequence) +
                              ", \"collective\": " + jsonQuote(s.inFlightName) +
                              ", \"seconds\": " + jsonNumber(s.inFlightSeconds) + "}"
                        : std::string("null");
      out += ", \"waiting\": ";
      out += s.waiting
                 ? "{\"sequence\": " + std::to_string(s.waitSequence) + ", \"step\": " + std::to_string(s.waitStep) +
                       ", \"step_kind\": " + jsonQuote(s.waitStepKind) + ", \"peer\": " + std::to_string(s.waitPeer) +
                       ", \"slice\": " + std::to_string(s.waitSlice) + ", \"slices\": " + std::to_string(s.waitSlices) +
                       ", \"seconds\": " + jsonNumber(s.waitSeconds) + "}"
                 : std::string("null");
      out += ", \"last\": ";
      out += s.anyCompleted
                 ? "{\"sequence\": " + std::to_string(s.lastSequence) + ", \"collective\": " + jsonQuote(s.lastName) +
                       ", \"seconds_ago\": " + jsonNumber(s.lastAgoSeconds) +
                       ", \"failed\": " + (s.lastFailed ? "true" : "false") + "}"
                 : std::string("null");
      out += ", \"stats\": [";
      bool first = true;
      for (const RankStatus::Stat& st : s.stats) {
        if (!validKind(st.kind)) continue;
        out += std::string(first ? "" : ", ") + "{\"collective\": " + jsonQuote(CollectiveMetrics::kindName(st.kind)) +
               ", \"max_bytes\": " + std::to_string(uint64_t{1} << std::min(st.bucket, 62)) +
               ", \"count\": " + std::to_string(st.count) + ", \"bytes\": " + std::to_string(st.bytes) +
               ", \"seconds\": " + jsonNumber(static_cast<double>(st.ns) / 1e9) + ", \"busbw_gbps\": " +
               jsonNumber(CollectiveMetrics::busBandwidthGBps(st.kind, view.nranks, st.bytes, st.ns)) + "}";
        first = false;
      }
      out += "]";
      if (!s.dumpPath.empty()) out += ", \"dump\": " + jsonQuote(s.dumpPath);
      out += "}";
    }
    out += "]}";
  }
  std::printf("%s]}\n", out.c_str());
}

}  // namespace

int statusCommand(int argc, char** argv) {
  StatusOptions o;
  if (const int status = parseStatusArguments(argc, argv, &o); status >= 0) return status;
  std::vector<int> pids = o.pids;
  if (pids.empty()) {
    pids = findStatusServers();
    pids.erase(std::remove(pids.begin(), pids.end(), static_cast<int>(getpid())), pids.end());
  }
  std::set<std::string> localHosts;
  const std::vector<StatusReply> replies = gather(pids, o, &localHosts);
  std::vector<RankStatus> answers;
  for (const StatusReply& r : replies) answers.insert(answers.end(), r.communicators.begin(), r.communicators.end());
  std::vector<CommunicatorView> views = groupByCommunicator(answers);
  for (CommunicatorView& view : views) explainSilentRanks(replies, localHosts, &view);
  if (o.json)
    printJson(views);
  else
    printText(views, replies, o);
  // Exit status for scripts: 0 when every process asked answered.
  return std::all_of(replies.begin(), replies.end(), [](const StatusReply& r) { return r.answered; }) ? 0 : 1;
}

}  // namespace weft
