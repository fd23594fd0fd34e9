// runtime/status without processes: the status reply's text survives a round trip and refuses
// malformed lines; the live progress snapshot says what the collective thread published; the
// culprit rule names the rank a stuck job waits on in each situation the issue lists.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/cycle_clock.h"
#include "runtime/exec/collective_progress.h"
#include "runtime/status/job_diagnosis.h"
#include "runtime/status/status_report.h"

namespace weft {
namespace {

RankStatus member(int rank, int nranks, uint64_t issued) {
  RankStatus s;
  s.commId = "0badcafe";
  s.rank = rank;
  s.nranks = nranks;
  s.host = "h:boot:ns";
  s.pid = 1000 + rank;
  s.issued = issued;
  s.completed = issued;
  if (issued > 0) {
    s.anyCompleted = true;
    s.lastSequence = issued - 1;
    s.lastName = "allreduce";
    s.lastAgoSeconds = 5;
  }
  for (int r = 0; r < nranks; ++r) s.members.push_back(RankStatus::Member{r, "h:boot:ns", 1000 + r});
  return s;
}

// `rank` is in collective #sequence for `seconds`, stuck on `peer` (-1: not waiting).
void inFlight(RankStatus* s, uint64_t sequence, double seconds, int peer) {
  s->inFlight = true;
  s->inFlightSequence = sequence;
  s->inFlightName = "allreduce";
  s->inFlightSeconds = seconds;
  s->issued = sequence + 1;
  s->completed = sequence;
  if (peer < 0) return;
  s->waiting = true;
  s->waitSequence = sequence;
  s->waitStep = 2;
  s->waitStepKind = "recv";
  s->waitPeer = peer;
  s->waitSeconds = seconds;
}

TEST(StatusReport, RoundTripsEveryLine) {
  RankStatus a = member(1, 4, 7);
  inFlight(&a, 7, 2.5, 0);
  a.stats.push_back(RankStatus::Stat{0, 10, 12, 12288, 123456});
  a.dumpPath = "/tmp/x.txt";
  RankStatus b = member(0, 2, 0);
  b.commId = "12345678";
  std::vector<RankStatus> back;
  std::string error;
  ASSERT_TRUE(decodeStatus(encodeStatus({a, b}), &back, &error)) << error;
  ASSERT_EQ(back.size(), 2u);
  const RankStatus& c = back[0];
  EXPECT_EQ(c.commId, "0badcafe");
  EXPECT_EQ(c.rank, 1);
  EXPECT_EQ(c.nranks, 4);
  EXPECT_EQ(c.issued, 8u);
  EXPECT_TRUE(c.inFlight);
  EXPECT_EQ(c.inFlightSequence, 7u);
  EXPECT_DOUBLE_EQ(c.inFlightSeconds, 2.5);
  EXPECT_TRUE(c.waiting);
  EXPECT_EQ(c.waitPeer, 0);
  EXPECT_EQ(c.waitStepKind, "recv");
  EXPECT_TRUE(c.anyCompleted);
  EXPECT_EQ(c.lastSequence, 6u);
  ASSERT_EQ(c.members.size(), 4u);
  EXPECT_EQ(c.members[3].pid, 1003);
  ASSERT_EQ(c.stats.size(), 1u);
  EXPECT_EQ(c.stats[0].bytes, 12288u);
  EXPECT_EQ(c.stats[0].ns, 123456);
  EXPECT_EQ(c.dumpPath, "/tmp/x.txt");
  EXPECT_FALSE(back[1].anyCompleted);
  EXPECT_FALSE(back[1].inFlight);
}

TEST(StatusReport, RefusesMalformedReplies) {
  std::vector<RankStatus> out;
  std::string error;
  const std::string good = encodeStatus({member(0, 2, 3)});
  EXPECT_TRUE(decodeStatus(good, &out, &error)) << error;
  EXPECT_FALSE(decodeStatus(good.substr(0, good.size() - 4), &out, &error));  // no end line
  EXPECT_NE(error.find("end"), std::string::npos) << error;
  EXPECT_FALSE(decodeStatus("inflight\t1\tallreduce\t0.5\nend\n", &out, &error));  // before any comm
  EXPECT_FALSE(decodeStatus("comm\tx\t2\t2\th\t1\t0\t0\nend\n", &out, &error));    // rank out of range
  EXPECT_FALSE(decodeStatus("comm\tx\t0\t2\th\t1\t0\t0\nwait\t1\t2\trecv\t9\t0\t1\t0.1\nend\n", &out, &error));
  EXPECT_NE(error.find("line 2"), std::string::npos) << error;
  EXPECT_FALSE(decodeStatus("comm\tx\t0\t2\th\t1\t12x\t0\nend\n", &out, &error));  // not a number
  EXPECT_FALSE(decodeStatus("comm\tx\t0\t2\th\t1\t0\t0\nbogus\nend\n", &out, &error));
  // A stat's nanoseconds above INT64_MAX would not encode back as read (found by fuzz_status_reply).
  EXPECT_FALSE(decodeStatus("comm\tx\t0\t2\th\t1\t0\t0\nstat\t0\t1\t1\t8\t12355555555555555456\nend\n", &out, &error));
  EXPECT_TRUE(decodeStatus("comm\tx\t0\t2\th\t1\t0\t0\nstat\t0\t1\t1\t8\t9223372036854775807\nend\n", &out, &error))
      << error;
}

TEST(CollectiveProgress, SnapshotFollowsThePublishedState) {
  CollectiveProgress p;
  ProgressSnapshot s = p.snapshot();
  EXPECT_EQ(s.issued, 0u);
  EXPECT_FALSE(s.inFlight);
  EXPECT_FALSE(s.anyCompleted);
  p.started(0, "allreduce", cycleStamp());
  p.finished(0, cycleStamp(), false);
  p.started(1, "broadcast", cycleStamp());
  WaitPoint w;
  w.sequence = 1;
  w.step = 3;
  w.stepKind = "recv";
  w.peer = 2;
  p.waiting(w);
  s = p.snapshot();
  EXPECT_EQ(s.issued, 2u);
  EXPECT_EQ(s.completed, 1u);
  EXPECT_TRUE(s.inFlight);
  EXPECT_EQ(s.inFlightSequence, 1u);
  EXPECT_STREQ(s.inFlightName, "broadcast");
  EXPECT_TRUE(s.waiting);
  EXPECT_EQ(s.wait.peer, 2);
  EXPECT_EQ(s.wait.step, 3u);
  EXPECT_TRUE(s.anyCompleted);
  EXPECT_STREQ(s.lastName, "allreduce");
  p.progressed();  // the wait is over
  EXPECT_FALSE(p.snapshot().waiting);
  p.waiting(w);
  p.finished(1, cycleStamp(), true);
  p.started(2, "allreduce", cycleStamp());
  s = p.snapshot();
  EXPECT_FALSE(s.waiting);  // the published wait belongs to #1, not to #2
  EXPECT_TRUE(s.lastFailed);
  EXPECT_STREQ(s.lastName, "broadcast");
}

CommunicatorView viewOf(const std::vector<RankStatus>& answers) {
  std::vector<CommunicatorView> views = groupByCommunicator(answers);
  EXPECT_EQ(views.size(), 1u);
  return views.front();
}

TEST(JobDiagnosis, NamesTheRankThatHasNotIssuedTheCollective) {
  std::vector<RankStatus> answers;
  for (int r = 0; r < 4; ++r) {
    answers.push_back(member(r, 4, 3));
    if (r != 2) inFlight(&answers.back(), 3, 4.0, r == 3 ? 2 : r == 0 ? 3 : -1);
  }
  EXPECT_EQ(diagnose(viewOf(answers)),
            "rank 2 (host h, pid 1002) has not issued allreduce #3 (its last, #2, ended 5.000 s ago); "
            "rank 3 has waited on rank 2 for 4.000 s; ranks 0-1 are further on");
}

TEST(JobDiagnosis, NamesTheRankStuckInAnEarlierCollective) {
  std::vector<RankStatus> answers;
  for (int r = 0; r < 8; ++r) {
    answers.push_back(member(r, 8, 0));
    inFlight(&answers.back(), r == 3 ? 1041 : 1042, 3.0, r == 3 ? 7 : 3);
  }
  EXPECT_EQ(diagnose(viewOf(answers)),
            "rank 3 (host h, pid 1003) is at allreduce #1041 step 2 (recv with rank 7) for 3.000 s; "
            "ranks 0-2 and 4-7 have waited on rank 3 for 3.000 s");
}

TEST(JobDiagnosis, NamesTheRankMostWaitedOnWhenAllIssuedAlike) {
  std::vector<RankStatus> answers;
  for (int r = 0; r < 4; ++r) {
    answers.push_back(member(r, 4, 0));
    inFlight(&answers.back(), 9, 2.0, r == 1 ? 0 : 1);
  }
  EXPECT_EQ(diagnose(viewOf(answers)),
            "rank 1 (host h, pid 1001) is at allreduce #9 step 2 (recv with rank 0) for 2.000 s; "
            "ranks 0 and 2-3 have waited on rank 1 for 2.000 s");
}

TEST(JobDiagnosis, DeadAndSilentRanksComeFirst) {
  std::vector<RankStatus> answers;
  for (int r : {0, 1, 3}) {
    answers.push_back(member(r, 4, 0));
    inFlight(&answers.back(), 5, 31.2, 2);
  }
  CommunicatorView view = viewOf(answers);
  view.dead[2] = true;
  view.silence[2] = "its process is gone";
  EXPECT_EQ(
      diagnose(view),
      "rank 2 (host h, pid 1002) is dead (its process is gone); ranks 0-1 and 3 have waited on rank 2 for 31.200 s");
  view.dead[2] = false;
  view.silence[2] = "is alive but did not answer";
  EXPECT_EQ(diagnose(view).substr(0, 56), "rank 2 (host h, pid 1002) is alive but did not answer; r");
  view.unasked[2] = true;  // on another host: the others' waits name it
  EXPECT_EQ(diagnose(view), "ranks 0-1 and 3 wait on rank 2 (host h, pid 1002) (rank 2 on other hosts not asked)");
}

TEST(JobDiagnosis, AMovingOrIdleJobHasNoCulprit) {
  std::vector<RankStatus> answers;
  for (int r = 0; r < 3; ++r) {
    answers.push_back(member(r, 3, 0));
    inFlight(&answers.back(), 100 + r, 0.0001, r == 0 ? 1 : -1);
  }
  EXPECT_EQ(diagnose(viewOf(answers)),
            "moving: no collective has been in flight for 1.000 s (ranks have issued 101 to 103 collectives)");
  answers.clear();
  for (int r = 0; r < 3; ++r) answers.push_back(member(r, 3, 7));
  EXPECT_EQ(diagnose(viewOf(answers)), "no collective in flight: every rank has finished allreduce #6");
  answers.clear();
  for (int r = 0; r < 3; ++r) answers.push_back(member(r, 3, 0));
  EXPECT_EQ(diagnose(viewOf(answers)), "no collective has been issued yet");
}

TEST(JobDiagnosis, RankListsRead) {
  EXPECT_EQ(ranksText({3}), "rank 3");
  EXPECT_EQ(ranksText({0, 1, 2, 4, 5, 6, 7}), "ranks 0-2 and 4-7");
  EXPECT_EQ(ranksText({9, 1, 5, 4}), "ranks 1, 4-5 and 9");
}

}  // namespace
}  // namespace weft
