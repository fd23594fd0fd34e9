// The collective record: the ring keeps the newest entries in order, closes the right one,
// copies a schedule's traffic (bounded), and its dump says what each call was and how it ended.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/schedule.h"
#include "common/cycle_clock.h"
#include "runtime/exec/collective_metrics.h"
#include "runtime/exec/collective_record.h"

namespace weft {
namespace {

std::vector<PeerTraffic> noTraffic;

TEST(CollectiveRecord, RingWrapsKeepingTheNewestInOrder) {
  CollectiveRecordRing ring(4);
  for (uint64_t seq = 0; seq < 10; ++seq) {
    ASSERT_NE(ring.begin(seq, "allreduce", "ring", 0, 32, 8, ncclFloat32, ncclSum, -1, 4, noTraffic), nullptr);
    if (seq != 8) {  // #8 stays in flight
      ASSERT_NE(ring.end(seq, ncclSuccess), nullptr) << seq;
    }
  }
  std::vector<uint64_t> held;
  for (const CollectiveRecord* r : ring.entries()) held.push_back(r->sequence);
  EXPECT_EQ(held, (std::vector<uint64_t>{6, 7, 8, 9}));
  EXPECT_EQ(ring.issued(), 10u);
  EXPECT_EQ(ring.completed(), 9u);
  EXPECT_EQ(ring.entries()[2]->endStamp, 0u);  // #8
  EXPECT_GE(ring.entries()[3]->endStamp, ring.entries()[3]->startStamp);
  EXPECT_EQ(ring.end(2, ncclSuccess), nullptr);  // overwritten long ago
  EXPECT_EQ(ring.end(9, ncclSuccess), nullptr);  // already closed
}

TEST(CollectiveRecord, OffRecordsNothing) {
  CollectiveRecordRing ring(0);
  EXPECT_FALSE(ring.enabled());
  EXPECT_EQ(ring.begin(0, "allreduce", "ring", 0, 32, 8, ncclFloat32, ncclSum, -1, 4, noTraffic), nullptr);
  EXPECT_EQ(ring.end(0, ncclSuccess), nullptr);
  EXPECT_TRUE(ring.entries().empty());
}

TEST(CollectiveRecord, TrafficIsCountedAndBounded) {
  Schedule s;
  s.steps.push_back({StepKind::Send, 3, {BufferKind::Send, 0, 100}, {}, {}});
  s.steps.push_back({StepKind::RecvReduce, 1, {BufferKind::Recv, 0, 40}, {BufferKind::Recv, 0, 40}, {}});
  s.steps.push_back({StepKind::Recv, 3, {}, {BufferKind::Recv, 0, 7}, {}});
  s.steps.push_back({StepKind::Copy, -1, {BufferKind::Send, 0, 1000}, {BufferKind::Recv, 0, 1000}, {}});
  s.steps.push_back({StepKind::Notify, 1, {}, {}, {}});
  std::vector<PeerTraffic> t = trafficOf(s);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].peer, 1);
  EXPECT_EQ(t[0].sentBytes, 0u);
  EXPECT_EQ(t[0].receivedBytes, 40u);
  EXPECT_EQ(t[1].peer, 3);
  EXPECT_EQ(t[1].sentBytes, 100u);
  EXPECT_EQ(t[1].receivedBytes, 7u);

  std::vector<PeerTraffic> many;
  for (int p = 0; p < 20; ++p) many.push_back(PeerTraffic{p, 10, 1});
  CollectiveRecordRing ring(1);
  const CollectiveRecord* r = ring.begin(5, "alltoall", "pairwise", 5, 20, 20, ncclInt8, -1, -1, 40, many);
  EXPECT_EQ(r->peerCount, 20u);
  EXPECT_EQ(r->sentBytes, 200u);
  EXPECT_EQ(r->receivedBytes, 20u);
  EXPECT_EQ(r->peers[3].peer, 3);
  const std::string dump = formatCollectiveRecords(ring, 0, 21, cycleStampToSteadyNs(r->startStamp) + 2000000000);
  EXPECT_NE(dump.find("rank 3 sent 10 B received 1 B, 20 peers in all: sent 200 B received 20 B"), std::string::npos)
      << dump;
  EXPECT_EQ(dump.find("rank 4 sent"), std::string::npos) << dump;
  EXPECT_NE(dump.find("in flight for 2.000 s"), std::string::npos) << dump;
}

TEST(CollectiveRecord, DumpSaysWhatEachCallWasAndHowItEnded) {
  CollectiveRecordRing ring(8);
  std::vector<PeerTraffic> ringPeers = {{1, 2048, 2048}, {3, 0, 0}};
  ring.begin(41, "allreduce", "ring", 0, 4096, 1024, ncclFloat32, ncclSum, -1, 6, ringPeers);
  ring.end(41, ncclSuccess);
  ring.begin(42, "broadcast", "binomial", 3, 80, 10, ncclInt64, -1, 2, 3, noTraffic);
  ring.end(42, ncclRemoteError, "rank 0: no progress for 2 s in broadcast #42 step 1 (recv from rank 2)");
  const std::string dump = formatCollectiveRecords(ring, 0, 4, cycleStampToSteadyNs(ring.entries().back()->endStamp));
  EXPECT_NE(dump.find("# weft collective record: rank 0 of 4, host "), std::string::npos) << dump;
  EXPECT_NE(dump.find("2 collectives issued, 2 completed; the last 2, oldest first"), std::string::npos) << dump;
  EXPECT_NE(dump.find("#41 allreduce 1024 x float sum, algorithm ring, 6 steps, rank 1 sent 2 KiB received 2 KiB, "
                      "rank 3 sent 0 B received 0 B: done in "),
            std::string::npos)
      << dump;
  EXPECT_NE(dump.find("#42 broadcast 10 x int64 root 2, algorithm binomial, 3 steps: failed after "), std::string::npos)
      << dump;
  EXPECT_NE(dump.find("(rank 0: no progress for 2 s in broadcast #42 step 1 (recv from rank 2))"), std::string::npos);
}

TEST(CollectiveMetrics, BucketsCountsAndBusBandwidth) {
  EXPECT_EQ(CollectiveMetrics::bucketOf(0), 0);
  EXPECT_EQ(CollectiveMetrics::bucketOf(1), 0);
  EXPECT_EQ(CollectiveMetrics::bucketOf(2), 1);
  EXPECT_EQ(CollectiveMetrics::bucketOf(1000), 10);
  EXPECT_EQ(CollectiveMetrics::bucketOf(1024), 10);
  EXPECT_EQ(CollectiveMetrics::bucketOf(1025), 11);
  EXPECT_EQ(CollectiveMetrics::bucketOf(uint64_t{1} << 50), CollectiveMetrics::kBuckets - 1);

  CollectiveMetrics metrics("/nonexistent/never-written.prom", 3600, 1, 4, 0xabcdef12);
  CollectiveRecordRing ring(4);
  auto finish = [&](uint64_t seq, int kind, uint64_t bytes, ncclResult_t result) {
    CollectiveRecord* r = ring.begin(seq, "x", "ring", kind, bytes, 1, ncclFloat32, -1, -1, 1, noTraffic);
    ring.end(seq, result, "failed");
    r->endStamp = r->startStamp;  // then set the duration exactly: 2 ms in stamps
    while (cycleStampToSteadyNs(r->endStamp) - cycleStampToSteadyNs(r->startStamp) < 2000000) r->endStamp += 1000;
    metrics.add(*r);
  };
  for (int k = 0; k < 3; ++k) finish(k, static_cast<int>(Collective::AllReduce), 4000, ncclSuccess);
  finish(3, static_cast<int>(Collective::AllReduce), 4000, ncclRemoteError);  // failed: not counted
  finish(4, -1, 4000, ncclSuccess);                                           // weft's own: not counted
  finish(5, kPointToPointKind, 10, ncclSuccess);
  const std::string text = metrics.exposition();
  const std::string labels = "{comm=\"abcdef12\",rank=\"1\",nranks=\"4\",collective=\"allreduce\",le=\"4096\"}";
  EXPECT_NE(text.find("# TYPE weft_collectives_total counter\n"), std::string::npos) << text;
  EXPECT_NE(text.find("weft_collectives_total" + labels + " 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("weft_collective_bytes_total" + labels + " 12000\n"), std::string::npos) << text;
  // 12000 bytes in about 6 ms, times all-reduce's 2(n-1)/n = 1.5: about 0.003 GB/s.
  const size_t at = text.find("weft_collective_busbw_gbps" + labels + " ");
  ASSERT_NE(at, std::string::npos) << text;
  const double busbw = std::atof(text.c_str() + at + std::strlen("weft_collective_busbw_gbps") + labels.size() + 1);
  EXPECT_NEAR(busbw, 1.5 * 12000 / 0.006 / 1e9, 0.0001) << text;
  EXPECT_NE(text.find("collective=\"sendrecv\",le=\"16\"} 1\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("le=\"4096\"} 4\n"), std::string::npos) << text;  // the failed one
}

TEST(CycleClock, StampsConvertToSteadyClockTime) {
  // A sleep measured both ways agrees to well under a millisecond.
  const uint64_t a = cycleStamp();
  const auto steadyA = std::chrono::steady_clock::now();
  usleep(50000);
  const uint64_t b = cycleStamp();
  const auto steadyB = std::chrono::steady_clock::now();
  const int64_t byStamps = cycleStampToSteadyNs(b) - cycleStampToSteadyNs(a);
  const int64_t bySteady = std::chrono::duration_cast<std::chrono::nanoseconds>(steadyB - steadyA).count();
  EXPECT_NEAR(static_cast<double>(byStamps), static_cast<double>(bySteady), 200000.0)
      << (cycleClockUsesTsc() ? "time-stamp counter" : "steady_clock");
  const int64_t now =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  EXPECT_NEAR(static_cast<double>(cycleStampToSteadyNs(cycleStamp())), static_cast<double>(now), 1000000.0);
}

}  // namespace
}  // namespace weft
