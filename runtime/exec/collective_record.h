// The record of a communicator's collectives: every call the executor starts is entered in a
// fixed-size ring (WEFT_RECORD_ENTRIES, the newest kept) with what it was, how it ran and when,
// and, if it failed, what it was waiting for. A rank whose call times out writes its ring to
// WEFT_DUMP_FILE; WEFT_TRACE turns finished records into a Chrome/Perfetto trace.
//
// Cost: two time-stamp-counter reads and a few stores per collective; the entries are allocated
// once, when the communicator is created (docs/observability.md has the measurement).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "nccl.h"

namespace weft {

struct Schedule;

// What a rank's schedule moves over the network, per peer (send and receive steps; codec
// steps, whose encoded size depends on the data, are not counted).
struct PeerTraffic {
  int peer = -1;
  uint64_t sentBytes = 0;
  uint64_t receivedBytes = 0;
};
std::vector<PeerTraffic> trafficOf(const Schedule& schedule);

// How dumps, traces and metrics name a communicator: the low 32 bits of its id, 8 hex digits.
std::string communicatorIdText(uint64_t commId);
// Where rank `rank` of communicator `commId` writes its record: WEFT_DUMP_FILE expanded ("" if
// it is empty).
std::string recordDumpPath(int rank, uint64_t commId);

// CollectiveRecord::kind of a group's sends and receives.
constexpr int kPointToPointKind = 8;

struct CollectiveRecord {
  uint64_t sequence = 0;        // the communicator's collective number (also in the COLL log lines)
  const char* collective = "";  // "AllReduce", "SendRecv", ... (static text)
  const char* algorithm = "";   // the plan's algorithm (static text)
  int kind = -1;                // a Collective, kPointToPointKind, or -1 (weft's own exchanges)
  uint64_t bytes = 0;           // the size nccl-tests would report for the call
  size_t count = 0;
  ncclDataType_t datatype = ncclFloat32;
  int op = -1;
  int root = -1;
  size_t steps = 0;
  // The schedule's traffic, copied (a plan may leave the cache while its records remain): the
  // first kPeersKept peers, and the totals over all of them.
  static constexpr size_t kPeersKept = 4;  // a ring, a tree, rhd up to 16 ranks: all of them
  PeerTraffic peers[kPeersKept];
  size_t peerCount = 0;
  uint64_t sentBytes = 0, receivedBytes = 0;
  uint64_t startStamp = 0;  // cycleStamp() (common/cycle_clock.h): cheaper than steady_clock
  uint64_t endStamp = 0;    // 0 while in flight
  ncclResult_t result = ncclSuccess;
  std::string failure;  // result != ncclSuccess: the error (with what it waited for); stale otherwise
};

class CollectiveRecordRing {
 public:
  // `capacity` entries, allocated now; 0 records nothing.
  explicit CollectiveRecordRing(size_t capacity = 0);

  bool enabled() const { return !entries_.empty(); }
  // Enters a started collective (the oldest entry is overwritten when the ring is full) and
  // returns it, or null when recording is off.
  CollectiveRecord* begin(uint64_t sequence, const char* collective, const char* algorithm, int kind, uint64_t bytes,
                          size_t count, ncclDataType_t datatype, int op, int root, size_t steps,
                          const std::vector<PeerTraffic>& traffic);
  // Closes the entry of `sequence` if the ring still holds it.
  CollectiveRecord* end(uint64_t sequence, ncclResult_t result, const std::string& failure = "");

  uint64_t issued() const { return issued_; }
  uint64_t completed() const { return completed_; }
  // The entries the ring holds, oldest first.
  std::vector<const CollectiveRecord*> entries() const;

 private:
  std::vector<CollectiveRecord> entries_;
  uint64_t issued_ = 0;     // begin() calls so far
  uint64_t completed_ = 0;  // end() calls so far
};

// One line per record, oldest first, after a header naming the rank, ranks, host and pid:
//   #1042 AllReduce algorithm ring count 1048576 float sum  started +12.345678 s  in flight
// `nowNs` (steady_clock ns, cycleStampToSteadyNs of a stamp) dates the lines relative to the dump.
std::string formatCollectiveRecords(const CollectiveRecordRing& ring, int rank, int nranks, int64_t nowNs);

}  // namespace weft
