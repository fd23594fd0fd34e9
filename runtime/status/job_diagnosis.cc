#include "runtime/status/job_diagnosis.h"

#include <algorithm>
#include <cstdio>

#include "common/units_text.h"

namespace weft {

namespace {

// A collective in flight for less than this is taken as moving, not as stuck: a live job's
// ranks are always a few microseconds apart.
constexpr double kStuckSeconds = 1.0;

// A decoded reply may carry any double (fuzz_status_reply found 1.8e20 s): clamped before the
// conversion, which is undefined for NaN and beyond int64_t.
std::string secondsText(double seconds) {
  constexpr double kLimitNs = 9.0e18;
  const double ns = seconds * 1e9;
  if (!(ns == ns)) return durationText(0);
  return durationText(static_cast<int64_t>(ns > kLimitNs ? kLimitNs : ns < -kLimitNs ? -kLimitNs : ns));
}

std::string waitText(const RankStatus& s) {
  std::string text = "step " + std::to_string(s.waitStep) + " (" + s.waitStepKind;
  if (s.waitPeer >= 0) text += " with rank " + std::to_string(s.waitPeer);
  return text + ")";
}

// The name of collective #sequence, from whichever rank knows it.
std::string collectiveNamed(const CommunicatorView& view, uint64_t sequence) {
  for (const auto& r : view.ranks) {
    if (r && r->inFlight && r->inFlightSequence == sequence) return r->inFlightName;
    if (r && r->anyCompleted && r->lastSequence == sequence) return r->lastName;
  }
  return "collective";
}

// The ranks that answered and are stuck waiting on `rank`.
std::vector<int> waitersOn(const CommunicatorView& view, int rank) {
  std::vector<int> waiters;
  for (int r = 0; r < view.nranks; ++r)
    if (r != rank && view.ranks[r] && view.ranks[r]->waiting && view.ranks[r]->waitPeer == rank) waiters.push_back(r);
  return waiters;
}

std::string waitersClause(const CommunicatorView& view, int rank) {
  const std::vector<int> waiters = waitersOn(view, rank);
  if (waiters.empty()) return "";
  double longest = 0;
  for (int r : waiters) longest = std::max(longest, view.ranks[r]->waitSeconds);
  return "; " + ranksText(waiters) + (waiters.size() == 1 ? " has" : " have") + " waited on rank " +
         std::to_string(rank) + " for " + secondsText(longest);
}

// What `rank` is doing at the point the others wait for.
std::string culpritClause(const CommunicatorView& view, int rank) {
  const RankStatus& s = *view.ranks[rank];
  std::string text = rankName(view, rank);
  if (s.inFlight) {
    text += " is at " + s.inFlightName + " #" + std::to_string(s.inFlightSequence);
    if (s.waiting) text += " " + waitText(s) + " for " + secondsText(s.waitSeconds);
    return text;
  }
  text += " has not issued " + collectiveNamed(view, s.issued) + " #" + std::to_string(s.issued);
  if (s.anyCompleted)
    text += std::string(" (its last, #") + std::to_string(s.lastSequence) + (s.lastFailed ? ", failed " : ", ended ") +
            secondsText(s.lastAgoSeconds) + " ago)";
  return text;
}

}  // namespace

std::vector<CommunicatorView> groupByCommunicator(const std::vector<RankStatus>& answers) {
  std::vector<CommunicatorView> views;
  for (const RankStatus& a : answers) {
    auto it = std::find_if(views.begin(), views.end(),
                           [&](const CommunicatorView& v) { return v.commId == a.commId && v.nranks == a.nranks; });
    if (it == views.end()) {
      CommunicatorView v;
      v.commId = a.commId;
      v.nranks = a.nranks;
      v.ranks.resize(a.nranks);
      v.members.resize(a.nranks);
      v.silence.resize(a.nranks);
      v.dead.resize(a.nranks, false);
      v.unasked.resize(a.nranks, false);
      views.push_back(std::move(v));
      it = views.end() - 1;
    }
    if (a.rank < 0 || a.rank >= it->nranks) continue;
    if (!a.unreachedReason.empty()) {  // asked through another process, which got no answer
      if (!it->ranks[a.rank]) {
        it->silence[a.rank] = a.unreachedReason;
        it->unasked[a.rank] = false;
      }
      continue;
    }
    it->ranks[a.rank] = a;
    it->unasked[a.rank] = false;
    for (const RankStatus::Member& m : a.members)
      if (m.rank >= 0 && m.rank < it->nranks && it->members[m.rank].rank < 0) it->members[m.rank] = m;
    it->members[a.rank] = RankStatus::Member{a.rank, a.host, a.pid};
  }
  return views;
}

std::string rankName(const CommunicatorView& view, int rank) {
  std::string text = "rank " + std::to_string(rank);
  if (rank >= 0 && rank < static_cast<int>(view.members.size()) && view.members[rank].rank == rank)
    text +=
        " (host " + shortHostName(view.members[rank].host) + ", pid " + std::to_string(view.members[rank].pid) + ")";
  return text;
}

std::string ranksText(const std::vector<int>& ranks) {
  std::vector<int> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::string> runs;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    runs.push_back(j == i ? std::to_string(sorted[i]) : std::to_string(sorted[i]) + "-" + std::to_string(sorted[j]));
    i = j + 1;
  }
  std::string text = sorted.size() == 1 ? "rank " : "ranks ";
  for (size_t k = 0; k < runs.size(); ++k) text += (k == 0 ? "" : k + 1 == runs.size() ? " and " : ", ") + runs[k];
  return text;
}

std::string rankActivity(const RankStatus& s) {
  std::string text;
  if (s.inFlight) {
    text =
        "in " + s.inFlightName + " #" + std::to_string(s.inFlightSequence) + " for " + secondsText(s.inFlightSeconds);
    if (s.waiting) text += ", stuck at " + waitText(s) + " for " + secondsText(s.waitSeconds);
  } else {
    text = "idle";
  }
  if (s.anyCompleted)
    text += std::string("; last ") + s.lastName + " #" + std::to_string(s.lastSequence) +
            (s.lastFailed ? " failed " : " ended ") + secondsText(s.lastAgoSeconds) + " ago";
  else
    text += "; no collective finished yet";
  return text;
}

std::string rankSummary(const CommunicatorView& view, int rank) {
  if (!view.ranks[rank]) return (view.dead[rank] ? "dead: " : "") + view.silence[rank];
  const RankStatus& s = *view.ranks[rank];
  std::string text = rankActivity(s);
  if (!s.dumpPath.empty()) text += "; its record is asked for, to " + s.dumpPath;
  return text;
}

std::string diagnose(const CommunicatorView& view) {
  // Dead or silent ranks first: nothing else can finish without them.
  std::vector<std::string> clauses;
  std::vector<int> unasked;
  for (int r = 0; r < view.nranks; ++r) {
    if (view.ranks[r]) continue;
    if (view.unasked[r]) {
      unasked.push_back(r);
      continue;
    }
    std::string why = view.silence[r].empty() ? "did not answer" : view.silence[r];
    clauses.push_back(rankName(view, r) + (view.dead[r] ? " is dead (" + why + ")" : " " + why) +
                      waitersClause(view, r));
  }
  if (!clauses.empty()) {
    std::string text;
    for (const std::string& c : clauses) text += (text.empty() ? "" : "; ") + c;
    return text;
  }
  const std::string outOfReach = unasked.empty() ? "" : " (" + ranksText(unasked) + " on other hosts not asked)";
  std::vector<int> answered;
  for (int r = 0; r < view.nranks; ++r)
    if (view.ranks[r]) answered.push_back(r);
  if (answered.empty()) return "no rank answered" + outOfReach;
  uint64_t most = 0, fewest = UINT64_MAX;
  double longestInFlight = -1;  // -1: none in flight
  for (int r : answered) {
    most = std::max(most, view.ranks[r]->issued);
    fewest = std::min(fewest, view.ranks[r]->issued);
    if (view.ranks[r]->inFlight) longestInFlight = std::max(longestInFlight, view.ranks[r]->inFlightSeconds);
  }
  if (longestInFlight >= 0 && longestInFlight < kStuckSeconds)
    return "moving: no collective has been in flight for " + secondsText(kStuckSeconds) + " (ranks have issued " +
           (fewest == most ? std::to_string(most) : std::to_string(fewest) + " to " + std::to_string(most)) +
           " collectives)" + outOfReach;
  if (fewest < most) {  // the rank furthest behind
    int culprit =
        *std::find_if(answered.begin(), answered.end(), [&](int r) { return view.ranks[r]->issued == fewest; });
    std::string text = culpritClause(view, culprit) + waitersClause(view, culprit);
    std::vector<int> ahead;
    for (int r : answered)
      if (view.ranks[r]->issued > fewest && !(view.ranks[r]->waiting && view.ranks[r]->waitPeer == culprit))
        ahead.push_back(r);
    if (!ahead.empty()) text += "; " + ranksText(ahead) + (ahead.size() == 1 ? " is" : " are") + " further on";
    return text + outOfReach;
  }
  // Every rank issued as many: the one most of the others wait on.
  int culprit = -1;
  size_t mostWaiters = 0;
  std::vector<int> inFlight;
  for (int r = 0; r < view.nranks; ++r) {
    if (view.ranks[r] && view.ranks[r]->inFlight) inFlight.push_back(r);
    const size_t waiters = waitersOn(view, r).size();
    if (waiters > mostWaiters) {
      mostWaiters = waiters;
      culprit = r;
    }
  }
  if (culprit >= 0 && !view.ranks[culprit])  // waited on, out of reach
    return ranksText(waitersOn(view, culprit)) + " wait on " + rankName(view, culprit) + outOfReach;
  if (culprit >= 0) {
    if (!view.ranks[culprit]->inFlight)
      return rankName(view, culprit) + " has finished " + collectiveNamed(view, most - 1) + " #" +
             std::to_string(most - 1) + waitersClause(view, culprit) + outOfReach;
    return culpritClause(view, culprit) + waitersClause(view, culprit) + outOfReach;
  }
  if (!inFlight.empty())
    return ranksText(inFlight) + (inFlight.size() == 1 ? " is" : " are") + " in " +
           collectiveNamed(view, view.ranks[inFlight.front()]->inFlightSequence) + " #" +
           std::to_string(view.ranks[inFlight.front()]->inFlightSequence) + " and none is stuck" + outOfReach;
  if (most == 0) return "no collective has been issued yet" + outOfReach;
  return "no collective in flight: every rank has finished " + collectiveNamed(view, most - 1) + " #" +
         std::to_string(most - 1) + outOfReach;
}

}  // namespace weft
