#include "runtime/status/timeout_inquiry.h"

#include <unistd.h>

#include <thread>

#include "runtime/comm/communicator.h"
#include "runtime/status/job_diagnosis.h"
#include "runtime/status/remote_status.h"
#include "runtime/status/status_client.h"
#include "runtime/status/status_server.h"

namespace weft {

namespace {
constexpr double kInquirySeconds = 1.0;  // added once to a time-out that already took WEFT_TIMEOUT
}

std::string askPeersAfterTimeout(ncclComm* comm) {
  if (comm->nranks < 2 || comm->layout.ranks.size() != static_cast<size_t>(comm->nranks)) return "";
  const RankStatus mine = communicatorStatus(comm, false, false);
  std::vector<int> pids;  // this host's other processes
  for (const RankInfo& info : comm->layout.ranks)
    if (info.rank != comm->rank && mine.host == info.hostName && info.pid != getpid()) pids.push_back(info.pid);

  // Other hosts through their TCP endpoints, this host through the Unix sockets, side by side.
  const RemoteStatusTargets remote = remoteStatusTargetsOf(comm);
  std::vector<RankStatus> remoteAnswers;
  std::thread remoteAsk;
  if (!remote.targets.empty())
    remoteAsk = std::thread([&] { remoteAnswers = askRemoteRanks(remote, "dump", kInquirySeconds); });
  const std::vector<StatusReply> replies = askStatusServers(pids, "dump", kInquirySeconds);
  if (remoteAsk.joinable()) remoteAsk.join();

  std::vector<RankStatus> answers{mine};
  for (const StatusReply& reply : replies)
    for (const RankStatus& c : reply.communicators)
      if (c.commId == mine.commId && c.nranks == mine.nranks) answers.push_back(c);
  answers.insert(answers.end(), remoteAnswers.begin(), remoteAnswers.end());
  CommunicatorView view = groupByCommunicator(answers).front();
  explainSilentRanks(replies, {mine.host}, &view);

  std::string text = "\nwhat its peers say:";
  for (int r = 0; r < view.nranks; ++r)
    if (r != comm->rank) text += "\n  " + rankName(view, r) + ": " + rankSummary(view, r);
  return text + "\nculprit: " + diagnose(view);
}

}  // namespace weft
