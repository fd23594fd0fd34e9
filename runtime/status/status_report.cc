#include "runtime/status/status_report.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace weft {

namespace {

constexpr int kMaxRanks = 1 << 20;  // as bootstrap allows: a reader sizes tables by nranks

std::string joined(std::initializer_list<std::string> fields) {
  std::string line;
  for (const std::string& f : fields) line += (line.empty() ? "" : "\t") + f;
  return line + "\n";
}

std::string seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6f", s);
  return text;
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> fields;
  size_t start = 0;
  for (;;) {
    size_t tab = line.find('\t', start);
    fields.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) return fields;
    start = tab + 1;
  }
}

// Whole-field numbers only: "12x" or "" is an error, not 12 or 0.
bool toU64(const std::string& s, uint64_t* out) {
  if (s.empty() || s[0] == '-') return false;
  char* end = nullptr;
  errno = 0;
  *out = std::strtoull(s.c_str(), &end, 10);
  return errno == 0 && *end == 0;
}
bool toInt(const std::string& s, int* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(s.c_str(), &end, 10);
  *out = static_cast<int>(v);
  return errno == 0 && *end == 0 && v == *out;
}
bool toU32(const std::string& s, uint32_t* out) {
  uint64_t v = 0;
  if (!toU64(s, &v) || v > UINT32_MAX) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}
bool toSeconds(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return *end == 0 && *out >= 0 && *out < 1e12;
}

}  // namespace

std::string shortHostName(const std::string& host) { return host.substr(0, host.find(':')); }

std::string encodeStatus(const std::vector<RankStatus>& communicators) {
  std::string out;
  for (const RankStatus& c : communicators) {
    if (!c.unreachedReason.empty()) {
      std::string reason = c.unreachedReason;
      for (char& ch : reason)
        if (ch == '\t' || ch == '\n') ch = ' ';
      out += joined({"unreached", c.commId, std::to_string(c.rank), std::to_string(c.nranks), reason});
      continue;
    }
    out += joined({"comm", c.commId, std::to_string(c.rank), std::to_string(c.nranks), c.host, std::to_string(c.pid),
                   std::to_string(c.issued), std::to_string(c.completed)});
    if (c.inFlight)
      out += joined({"inflight", std::to_string(c.inFlightSequence), c.inFlightName, seconds(c.inFlightSeconds)});
    if (c.waiting)
      out += joined({"wait", std::to_string(c.waitSequence), std::to_string(c.waitStep), c.waitStepKind,
                     std::to_string(c.waitPeer), std::to_string(c.waitSlice), std::to_string(c.waitSlices),
                     seconds(c.waitSeconds)});
    if (c.anyCompleted)
      out += joined(
          {"last", std::to_string(c.lastSequence), c.lastName, seconds(c.lastAgoSeconds), c.lastFailed ? "1" : "0"});
    for (const RankStatus::Member& m : c.members)
      out += joined({"member", std::to_string(m.rank), m.host, std::to_string(m.pid)});
    for (const RankStatus::Stat& s : c.stats)
      out += joined({"stat", std::to_string(s.kind), std::to_string(s.bucket), std::to_string(s.count),
                     std::to_string(s.bytes), std::to_string(s.ns)});
    if (!c.dumpPath.empty()) out += joined({"dump", c.dumpPath});
  }
  return out + "end\n";
}

bool decodeStatus(const std::string& text, std::vector<RankStatus>* communicators, std::string* error) {
  communicators->clear();
  std::istringstream in(text);
  std::string line;
  size_t number = 0;
  auto bad = [&](const char* why) {
    *error = "line " + std::to_string(number) + " (" + line.substr(0, 80) + "): " + why;
    return false;
  };
  while (std::getline(in, line)) {
    ++number;
    const std::vector<std::string> f = split(line);
    const std::string& tag = f[0];
    if (tag == "end") return true;
    if (tag == "comm") {
      RankStatus c;
      if (f.size() != 8 || !toInt(f[2], &c.rank) || !toInt(f[3], &c.nranks) || !toInt(f[5], &c.pid) ||
          !toU64(f[6], &c.issued) || !toU64(f[7], &c.completed) || c.nranks <= 0 || c.nranks > kMaxRanks ||
          c.rank < 0 || c.rank >= c.nranks)
        return bad("a malformed comm line");
      c.commId = f[1];
      c.host = f[4];
      communicators->push_back(std::move(c));
      continue;
    }
    if (tag == "unreached") {
      RankStatus c;
      if (f.size() != 5 || !toInt(f[2], &c.rank) || !toInt(f[3], &c.nranks) || c.nranks <= 0 || c.nranks > kMaxRanks ||
          c.rank < 0 || c.rank >= c.nranks || f[4].empty())
        return bad("a malformed unreached line");
      c.commId = f[1];
      c.unreachedReason = f[4];
      communicators->push_back(std::move(c));
      continue;
    }
    if (communicators->empty() || !communicators->back().unreachedReason.empty())
      return bad("a line outside a comm block");
    RankStatus& c = communicators->back();
    if (tag == "inflight") {
      if (f.size() != 4 || !toU64(f[1], &c.inFlightSequence) || !toSeconds(f[3], &c.inFlightSeconds))
        return bad("a malformed inflight line");
      c.inFlight = true;
      c.inFlightName = f[2];
    } else if (tag == "wait") {
      if (f.size() != 8 || !toU64(f[1], &c.waitSequence) || !toU32(f[2], &c.waitStep) || !toInt(f[4], &c.waitPeer) ||
          !toU32(f[5], &c.waitSlice) || !toU32(f[6], &c.waitSlices) || !toSeconds(f[7], &c.waitSeconds) ||
          c.waitPeer < -1 || c.waitPeer >= c.nranks)
        return bad("a malformed wait line");
      c.waiting = true;
      c.waitStepKind = f[3];
    } else if (tag == "last") {
      if (f.size() != 5 || !toU64(f[1], &c.lastSequence) || !toSeconds(f[3], &c.lastAgoSeconds) ||
          (f[4] != "0" && f[4] != "1"))
        return bad("a malformed last line");
      c.anyCompleted = true;
      c.lastName = f[2];
      c.lastFailed = f[4] == "1";
    } else if (tag == "member") {
      RankStatus::Member m;
      if (f.size() != 4 || !toInt(f[1], &m.rank) || !toInt(f[3], &m.pid) || m.rank < 0 || m.rank >= c.nranks)
        return bad("a malformed member line");
      m.host = f[2];
      c.members.push_back(std::move(m));
    } else if (tag == "stat") {
      RankStatus::Stat s;
      uint64_t ns = 0;
      if (f.size() != 6 || !toInt(f[1], &s.kind) || !toInt(f[2], &s.bucket) || !toU64(f[3], &s.count) ||
          !toU64(f[4], &s.bytes) || !toU64(f[5], &ns) || ns > static_cast<uint64_t>(INT64_MAX))
        return bad("a malformed stat line");  // ns above INT64_MAX would not encode back as read
      s.ns = static_cast<int64_t>(ns);
      c.stats.push_back(s);
    } else if (tag == "dump") {
      if (f.size() != 2) return bad("a malformed dump line");
      c.dumpPath = f[1];
    } else {
      return bad("an unknown line");
    }
  }
  *error = "the reply ends before its end line";
  return false;
}

}  // namespace weft
