// A communicator's collective statistics -- how many of each collective finished, their bytes
// (the size nccl-tests reports), their time and the bus bandwidth that makes, per power-of-two
// size bucket. Always kept (a few stores per collective, on the thread that runs them; relaxed
// atomics, so `weft-info status --stats` reads them from the status thread), and with
// WEFT_METRICS_FILE written in Prometheus' text exposition format, for a node exporter's
// textfile collector: each communicator rewrites its own file, atomically, when
// WEFT_METRICS_INTERVAL seconds have passed since the last write (checked as a collective ends;
// no thread of its own) and when it is destroyed.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nccl.h"
#include "runtime/exec/collective_record.h"

namespace weft {

class CollectiveMetrics {
 public:
  static constexpr int kKinds = kPointToPointKind + 1;  // every Collective, then send/recv
  static constexpr int kBuckets = 41;                   // size <= 2^b bytes, b = 0 .. 40 (1 TiB and more)

  // With WEFT_METRICS_FILE's path, or none (counts only). `commId` names the communicator (%c,
  // and a label).
  static std::unique_ptr<CollectiveMetrics> fromEnv(int rank, int nranks, uint64_t commId);
  // `path` empty: counts only, no file.
  CollectiveMetrics(std::string path, double intervalSeconds, int rank, int nranks, uint64_t commId);

  // Counts a finished record (a failed one, and weft's own exchanges, are not counted); writes
  // the file when the interval has passed.
  void add(const CollectiveRecord& record);
  // The whole exposition, as the file holds it.
  std::string exposition() const;
  ncclResult_t write();  // succeeds at once without a path
  const std::string& path() const { return path_; }

  // The cells that counted something, read from any thread.
  struct Totals {
    int kind, bucket;
    uint64_t count, bytes;
    int64_t ns;
  };
  std::vector<Totals> totals() const;

  static int bucketOf(uint64_t bytes);  // the smallest b with bytes <= 2^b (capped)
  // "allreduce", ..., "sendrecv" for a kind below kKinds.
  static const char* kindName(int kind);
  // GB/s of `bytes` (nccl-tests' size) moved in `ns` by collectives of `kind` on `nranks`, with
  // nccl-tests' bus factor (1 for send/recv); 0 when no time passed.
  static double busBandwidthGBps(int kind, int nranks, uint64_t bytes, int64_t ns);

 private:
  struct Cell {
    std::atomic<uint64_t> count{0}, bytes{0};
    std::atomic<uint64_t> ticks{0};  // cycle-clock ticks (common/cycle_clock.h), converted when read
  };
  std::array<std::array<Cell, kBuckets>, kKinds> cells_;
  std::string path_;
  int64_t intervalNs_;
  int rank_, nranks_;
  uint64_t commId_;
  int64_t nextWriteNs_;  // steady-clock time after which add() writes
};

}  // namespace weft
