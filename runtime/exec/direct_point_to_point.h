// Sends and receives on device buffers between ranks of one host (PyTorch's all_to_all with
// uneven splits, pipeline parallelism) go direct: the receiver exports its device buffer, the
// sender maps it and copies its data straight into it on the device, then sends an 8-byte token;
// the receive is done when the token arrives. Staged, the same transfer crosses PCIe twice and
// the host's shared memory once.
//
// Only the two ranks of a transfer take part, so a group's sends and receives agree pair by pair
// in two small exchanges with each partner, before the data moves:
//   1. records: per call with the partner, whether this side can go direct (its buffer is device
//      memory, left in place by the stream path) and, for a receive, its buffer's export;
//   2. verdicts: the sender mapped the receiver's buffer (a sandbox may refuse CUDA IPC);
// then one run: tokens for the direct transfers, data for the others (staged through the
// batch's host staging places where the buffers are device memory, as before).
// Which calls take part is decided from what both ranks of a pair know alike (the call's size,
// the communicator's layout and settings), so a pair never waits on an exchange the other side
// skips; a call between a pair is matched by position, as NCCL matches sends with receives.
//
// The exchanges are per group, so both ranks of a pair must group their sends and receives to
// each other alike, as PyTorch's all_to_all and batch_isend_irecv do. NCCL treats calls grouped
// differently as undefined too (NVIDIA/nccl#1279: its connection set-up then fails with "Message
// truncated"); here the records disagree and both ranks get an error, never a wrong result.
// WEFT_DIRECT_SEND_RECV=0 stages every transfer instead (the schedule then tolerates it, as
// weft did before). docs/architecture.md, "Planned", says how to lift the restriction.
#pragma once

#include <memory>
#include <vector>

#include "runtime/exec/collective.h"
#include "runtime/exec/executor.h"

namespace weft {

// The same verdict on both ranks of a transfer: the direct path is on, every rank of the
// communicator is on this host and has a device, the peer is another rank, the call is at least
// WEFT_DIRECT_MIN_BYTES, and its buffer is memory a device reaches (device or pinned host memory,
// as NCCL requires of every buffer). So sends and receives on malloc'd host memory (weft's CPU
// jobs, its PyTorch backend) keep the plain schedule and its tolerance of any grouping; a pair
// where one side passes malloc'd memory and the other device memory (invalid in NCCL) disagrees,
// and both get an error. Whether the buffer can go direct (device memory left in place by the
// stream path) only each side knows: its record says.
bool pointToPointDirectEligible(const CollectiveCall& call);

// One group's sends and receives on one communicator, run as the two exchanges and the data.
class DirectPointToPoint {
 public:
  // Null when no call with any partner is eligible, or sends and receives to self do not pair up
  // (the plain schedule then reports it, before any message): the group runs as one plain schedule.
  static std::unique_ptr<DirectPointToPoint> start(const std::vector<const CollectiveCall*>& calls);
  ~DirectPointToPoint();

  // The next run of the group (first the records' exchange); null `*plan` once the data ran.
  // The plan and buffers live in this object until the next call.
  ncclResult_t nextRun(const PreparedSchedule** plan, RunBuffers* buffers, const char** name);
  const CollectiveCall& firstCall() const { return *calls_.front(); }

 private:
  struct Record;
  struct CallState;
  enum class Stage { Records, Verdicts, Data, Done, Finished };

  explicit DirectPointToPoint(const std::vector<const CollectiveCall*>& calls);
  void prepareRecords();
  ncclResult_t takeRecords();          // after the records' exchange: maps and starts the direct copies
  ncclResult_t prepareData();          // after the verdicts: waits for the copies, stages the others
  ncclResult_t copyOutOfOwnBuffers();  // after the data: the receives through the own buffers
  ncclResult_t waitForCopies();        // the direct sends' copies queued on the work stream
  void exchangePlan(bool verdicts, PreparedSchedule* plan) const;

  std::vector<const CollectiveCall*> calls_;
  std::vector<CallState> state_;
  std::vector<int> partners_;  // the peers records are exchanged with, ascending
  // Per partner, its first record in the outgoing and incoming halves of records_, and how many.
  std::vector<size_t> firstRecord_, recordCount_;
  std::vector<Record> records_;   // outgoing, then incoming
  std::vector<uint64_t> tokens_;  // per call: a direct send's token, or where a direct receive's lands
  PreparedSchedule recordsPlan_, verdictsPlan_, dataPlan_;
  bool copiesQueued_ = false;  // direct sends' copies are on the device work stream
  Stage stage_ = Stage::Records;
};

}  // namespace weft
