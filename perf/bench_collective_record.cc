// What the always-on collective record costs per collective: one begin() and one end() on a
// ring of the default size (WEFT_RECORD_ENTRIES), beside the clock reads it is made of; and
// everything the executor does per collective for observability: the record, the live progress
// the status server reads, and the statistics.
//   build/perf/bench_collective_record
#include <benchmark/benchmark.h>

#include <chrono>
#include <vector>

#include "common/cycle_clock.h"
#include "runtime/exec/collective_metrics.h"
#include "runtime/exec/collective_progress.h"
#include "runtime/exec/collective_record.h"

namespace {

void BM_RecordBeginEnd(benchmark::State& state) {
  weft::CollectiveRecordRing ring(1024);
  const std::vector<weft::PeerTraffic> traffic = {{1, 4, 4}};
  uint64_t sequence = 0;
  for (auto _ : state) {
    ring.begin(sequence, "allreduce", "ring", 0, 8, 2, ncclFloat32, ncclSum, -1, 4, traffic);
    benchmark::DoNotOptimize(ring.end(sequence, ncclSuccess));
    ++sequence;
  }
}
BENCHMARK(BM_RecordBeginEnd);

// What runtime/exec/collective.cc's startRun and endRecord do per collective when no trace or
// metrics file is asked for.
void BM_RecordProgressAndStatistics(benchmark::State& state) {
  weft::CollectiveRecordRing ring(1024);
  weft::CollectiveProgress progress;
  weft::CollectiveMetrics metrics("", 10, 0, 2, 1);
  const std::vector<weft::PeerTraffic> traffic = {{1, 4, 4}};
  uint64_t sequence = 0;
  for (auto _ : state) {
    const weft::CollectiveRecord* begun =
        ring.begin(sequence, "allreduce", "ring", 0, 8, 2, ncclFloat32, ncclSum, -1, 4, traffic);
    progress.started(sequence, "allreduce", begun->startStamp);
    const weft::CollectiveRecord* ended = ring.end(sequence, ncclSuccess);
    progress.finished(sequence, ended->endStamp, false);
    metrics.add(*ended);
    ++sequence;
  }
}
BENCHMARK(BM_RecordProgressAndStatistics);

void BM_CycleStamp(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(weft::cycleStamp());
}
BENCHMARK(BM_CycleStamp);

void BM_SteadyClockNow(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(std::chrono::steady_clock::now());
}
BENCHMARK(BM_SteadyClockNow);

}  // namespace

BENCHMARK_MAIN();
