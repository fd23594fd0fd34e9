// Soak: a long random stream of collectives on 4 rank processes, as two fake hosts (so both shm
// and TCP carry traffic), over four communicators that force different algorithms (the cost
// model's choice, then rings, trees and halving-doubling, hierarchical and Bruck), in groups of
// one to four calls, in and out of place, every type and reduction, 0 to 16 Ki elements a rank.
// Every result is checked against the reference (tests/support/reference.h), and resident
// memory must stay flat. WEFT_SOAK_CALLS calls (default 10,000; the slow label runs 100,000).
//
// Chaos: the same stream, and one rank is killed with SIGKILL at a random moment (mid-call
// included). Every survivor must get an error from a call within twice WEFT_TIMEOUT of the
// death, with every result before it right, and abort its communicators without a hang or a
// crash; then shrink the communicator past the dead rank and carry on, checked, on the rest.
// WEFT_CHAOS_TRIALS trials (default 5; the slow label runs 100).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/dtype.h"
#include "nccl.h"
#include "tests/support/multiprocess.h"
#include "tests/support/reference.h"

using namespace weft;
using namespace weft::testing;

namespace {

constexpr int kRanks = 4;
constexpr size_t kMaxCount = 1 << 14;  // elements in one rank's block
constexpr int kMaxGroup = 4;
// Plan caches, rings and staging are all in place after this many calls; memory may not grow after.
constexpr int kWarmUpCalls = 200;
constexpr int64_t kResidentSlackKiB = 4096;
const char* const kPolicies[] = {
    nullptr,  // the cost model decides
    "allreduce:ring;allgather:ring;reducescatter:ring;broadcast:ring;reduce:ring;alltoall:pairwise",
    "allreduce:tree;allgather:rhd;reducescatter:rhd;broadcast:binomial;reduce:binomial;alltoall:bruck",
    "allreduce:rhd;allgather:bruck;reducescatter:hier;broadcast:ring;reduce:ring",
};
constexpr int kComms = sizeof(kPolicies) / sizeof(kPolicies[0]);

int soakCalls() {
  // The sanitizers look for other things, at several times the cost.
  return countFromEnv("WEFT_SOAK_CALLS", kUnderMemorySanitizer ? 2000 : 10000);
}

enum class Kind { AllReduce, Broadcast, Reduce, AllGather, ReduceScatter, AlltoAll, Count };
const char* const kKindNames[] = {"allreduce", "broadcast", "reduce", "allgather", "reducescatter", "alltoall"};

// One call of the stream. Every rank draws the same sequence from the same seed.
struct Call {
  Kind kind;
  ncclDataType_t type;
  ncclRedOp_t op;
  size_t count;
  bool inPlace;
  int root;
  unsigned seed;
};

Call drawCall(std::mt19937_64& random, unsigned seed, int nranks = kRanks) {
  Call c{};
  c.kind = static_cast<Kind>(random() % static_cast<int>(Kind::Count));
  c.type = kAllTypes[random() % std::size(kAllTypes)];
  c.op = kAllOps[random() % std::size(kAllOps)];
  switch (random() % 4) {  // small counts are where the edge cases are; large ones pipeline
    case 0: c.count = random() % 8; break;
    case 1: c.count = random() % 1024; break;
    default: c.count = random() % (kMaxCount + 1); break;
  }
  c.inPlace = random() % 2;
  c.root = static_cast<int>(random() % nranks);
  c.seed = seed;
  return c;
}

// The buffers of one call of a group, allocated and touched once for the whole run.
struct Slot {
  std::vector<char> send, recv;
};

// Issues `c` on `comm` from `slot`, filling the input first.
ncclResult_t issue(const Call& c, int rank, ncclComm_t comm, Slot& slot, int nranks = kRanks) {
  const size_t es = dataTypeSize(c.type), block = c.count * es;
  char* send = slot.send.data();
  char* recv = slot.recv.data();
  switch (c.kind) {
    case Kind::AllReduce:
      fillInput(send, c.count, rank, c.type, c.op, c.seed);
      return ncclAllReduce(send, c.inPlace ? send : recv, c.count, c.type, c.op, comm, nullptr);
    case Kind::Broadcast:
      fillInput(send, c.count, rank, c.type, ncclSum, c.seed);
      return ncclBroadcast(send, c.inPlace ? send : recv, c.count, c.type, c.root, comm, nullptr);
    case Kind::Reduce:
      fillInput(send, c.count, rank, c.type, c.op, c.seed);
      return ncclReduce(send, c.inPlace ? send : recv, c.count, c.type, c.op, c.root, comm, nullptr);
    case Kind::AllGather:
      if (c.inPlace) {
        fillInput(recv + rank * block, c.count, rank, c.type, ncclSum, c.seed);
        return ncclAllGather(recv + rank * block, recv, c.count, c.type, comm, nullptr);
      }
      fillInput(send, c.count, rank, c.type, ncclSum, c.seed);
      return ncclAllGather(send, recv, c.count, c.type, comm, nullptr);
    case Kind::ReduceScatter:
      fillInput(send, nranks * c.count, rank, c.type, c.op, c.seed);
      return ncclReduceScatter(send, c.inPlace ? send + rank * block : recv, c.count, c.type, c.op, comm, nullptr);
    case Kind::AlltoAll:
      fillInput(send, nranks * c.count, rank, c.type, ncclSum, c.seed);
      return ncclAlltoAll(send, c.inPlace ? send : recv, c.count, c.type, comm, nullptr);
    case Kind::Count: break;
  }
  return ncclInternalError;
}

// Wrong elements of `c`'s result on this rank.
size_t check(const Call& c, int rank, const Slot& slot, int index, int nranks = kRanks) {
  const size_t es = dataTypeSize(c.type), block = c.count * es;
  const char* send = slot.send.data();
  const char* recv = slot.recv.data();
  const std::string label = "rank " + std::to_string(rank) + " call " + std::to_string(index) + " " +
                            kKindNames[static_cast<int>(c.kind)] + (c.inPlace ? " in place" : "");
  auto reduction = [&](size_t offset) {
    return [&c, offset, nranks](size_t i) { return expectedReduction(nranks, offset + i, c.type, c.op, c.seed); };
  };
  auto copyOf = [&](int from, size_t offset) {
    return [&c, from, offset](size_t i) { return inputValue(from, offset + i, c.type, ncclSum, c.seed); };
  };
  switch (c.kind) {
    case Kind::AllReduce:
      return countMismatchesAgainst(c.inPlace ? send : recv, c.count, c.type, reduction(0), nranks, c.op,
                                    label.c_str());
    case Kind::Broadcast:
      return countMismatchesAgainst(c.inPlace ? send : recv, c.count, c.type, copyOf(c.root, 0), 1, ncclSum,
                                    label.c_str());
    case Kind::Reduce:
      if (rank != c.root) return 0;
      return countMismatchesAgainst(c.inPlace ? send : recv, c.count, c.type, reduction(0), nranks, c.op,
                                    label.c_str());
    case Kind::AllGather: {
      size_t wrong = 0;
      for (int r = 0; r < nranks; ++r)
        wrong += countMismatchesAgainst(recv + r * block, c.count, c.type, copyOf(r, 0), 1, ncclSum, label.c_str());
      return wrong;
    }
    case Kind::ReduceScatter:
      return countMismatchesAgainst(c.inPlace ? send + rank * block : recv, c.count, c.type, reduction(rank * c.count),
                                    nranks, c.op, label.c_str());
    case Kind::AlltoAll: {
      size_t wrong = 0;
      const char* out = c.inPlace ? send : recv;
      for (int j = 0; j < nranks; ++j)
        wrong += countMismatchesAgainst(out + j * block, c.count, c.type, copyOf(j, rank * c.count), 1, ncclSum,
                                        label.c_str());
      return wrong;
    }
    case Kind::Count: break;
  }
  return 1;
}

// Communicators for every policy: rank 0 makes an id, `world` carries it to the others.
bool initPolicyComms(ncclComm_t world, int rank, std::vector<ncclComm_t>* comms) {
  comms->assign(kComms, nullptr);
  (*comms)[0] = world;
  for (int k = 1; k < kComms; ++k) {
    ncclUniqueId id;
    std::memset(&id, 0, sizeof id);
    if (rank == 0 && ncclGetUniqueId(&id) != ncclSuccess) return false;
    if (ncclBroadcast(&id, &id, sizeof id, ncclUint8, 0, world, nullptr) != ncclSuccess) return false;
    setenv("WEFT_ALGO", kPolicies[k], 1);
    const ncclResult_t made = ncclCommInitRank(&(*comms)[k], kRanks, id, rank);
    unsetenv("WEFT_ALGO");
    if (made != ncclSuccess) return false;
  }
  return true;
}

// One rank's side of the stream: its communicators (one per policy), the buffers of a group's
// calls (allocated and touched once, never inside the stream) and the sequence every rank draws
// alike from the same seed.
struct StreamRank {
  int rank = 0;
  std::vector<ncclComm_t> comms;
  std::vector<Slot> slots;
  std::mt19937_64 random;
  unsigned seed = 1;
  int done = 0;               // calls completed
  ncclComm_t last = nullptr;  // the communicator of the latest group
};

// Joins the stream as `rank`, on two fake hosts named `hostPrefix` A and B. 0, or 1-2 when a
// communicator could not be made.
int joinStream(int rank, const ncclUniqueId& id, const char* hostPrefix, uint64_t seed, StreamRank* s) {
  setenv("WEFT_HOSTNAME", (std::string(hostPrefix) + (rank < kRanks / 2 ? "A" : "B")).c_str(), 1);
  ncclComm_t world;
  if (ncclCommInitRank(&world, kRanks, id, rank) != ncclSuccess) return 1;
  if (!initPolicyComms(world, rank, &s->comms)) return 2;
  s->rank = rank;
  s->slots.resize(kMaxGroup);
  for (Slot& slot : s->slots) {
    slot.send.assign(kRanks * kMaxCount * 8, 1);
    slot.recv.assign(kRanks * kMaxCount * 8, 1);
  }
  s->random.seed(seed);
  return 0;
}

// Draws the next group (one call, or a group of 2 to kMaxGroup, on a random communicator), issues
// it and, when it succeeded, adds its wrong elements to *wrong. The first error of the group.
ncclResult_t runNextGroup(StreamRank& s, size_t* wrong) {
  const int groupSize = s.random() % 3 == 0 ? 2 + static_cast<int>(s.random() % (kMaxGroup - 1)) : 1;
  s.last = s.comms[s.random() % kComms];
  std::vector<Call> group;
  for (int k = 0; k < groupSize; ++k) group.push_back(drawCall(s.random, s.seed++));
  ncclResult_t result = groupSize > 1 ? ncclGroupStart() : ncclSuccess;
  for (int k = 0; k < groupSize && result == ncclSuccess; ++k) result = issue(group[k], s.rank, s.last, s.slots[k]);
  if (groupSize > 1) {
    const ncclResult_t ended = ncclGroupEnd();
    if (result == ncclSuccess) result = ended;
  }
  if (result != ncclSuccess) return result;
  for (int k = 0; k < groupSize; ++k) *wrong += check(group[k], s.rank, s.slots[k], s.done + k);
  s.done += groupSize;
  return ncclSuccess;
}

// Rank exit codes: 0 every result right and memory flat; 1-3 set-up or a failed call (on
// stderr); 4 wrong results; 5 resident memory grew.
int soak(int rank, const ncclUniqueId& id, int calls) {
  StreamRank s;
  if (int failed = joinStream(rank, id, "soak", 20261203, &s)) return failed;
  size_t wrong = 0;
  int64_t residentAfterWarmUp = 0;
  while (s.done < calls) {
    if (s.done >= kWarmUpCalls && residentAfterWarmUp == 0) residentAfterWarmUp = residentKiB();
    if (runNextGroup(s, &wrong) != ncclSuccess) {
      std::fprintf(stderr, "rank %d group at call %d: %s\n", rank, s.done, ncclGetLastError(s.last));
      return 3;
    }
  }
  const int64_t residentAtEnd = residentKiB();
  for (int k = kComms - 1; k >= 0; --k) ncclCommDestroy(s.comms[k]);
  std::fprintf(stderr,
               "soak rank %d: %d calls, %zu wrong elements, resident %lld KiB after %d calls, %lld KiB at the end\n",
               rank, s.done, wrong, static_cast<long long>(residentAfterWarmUp), kWarmUpCalls,
               static_cast<long long>(residentAtEnd));
  if (wrong) return 4;
  // A sanitizer's quarantine grows by design.
  if (!kUnderMemorySanitizer && residentAfterWarmUp && residentAtEnd > residentAfterWarmUp + kResidentSlackKiB)
    return 5;
  return 0;
}

int chaosTrials() { return countFromEnv("WEFT_CHAOS_TRIALS", 5); }

constexpr double kChaosTimeoutSeconds = 5;  // WEFT_TIMEOUT of the chaos ranks

int64_t monotonicNanoseconds() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

// Shared by the test and its rank processes (mapped before the fork).
struct ChaosRecord {
  std::atomic<int64_t> deathNanoseconds;               // when the victim killed itself
  std::atomic<int64_t> errorAfterNanoseconds[kRanks];  // each survivor: its first error, after the death
};

constexpr int kCallsAfterShrink = 20;

// After the error: the survivors shrink the first communicator past the victim (whatever the
// failed calls left in its connections) and run kCallsAfterShrink checked calls on the result.
// 0 when all is right; 9 the shrink failed; 10 a call on the shrunk communicator failed; 11 a
// wrong result there.
int shrinkAndCarryOn(ncclComm_t parent, int rank, int victim, std::vector<Slot>& slots) {
  ncclComm_t shrunk = nullptr;
  int excluded = victim;
  // Survivors reach this up to one WEFT_TIMEOUT apart: one that waited on another survivor rather
  // than on the dead rank, over the sockets between the two fake hosts, notices only at its own
  // time-out (through shared memory a failed rank tells the peers waiting on it; through sockets
  // not yet). The shrink's bootstrap must outlast that, as a trainer's recovery would set it.
  setenv("WEFT_TIMEOUT", "30", 1);
  if (ncclCommShrink(parent, &excluded, 1, &shrunk, nullptr, NCCL_SHRINK_ABORT) != ncclSuccess) {
    std::fprintf(stderr, "chaos rank %d: ncclCommShrink failed: %s\n", rank, ncclGetLastError(parent));
    return 9;
  }
  int nranks = 0, newRank = -1;
  ncclCommCount(shrunk, &nranks);
  ncclCommUserRank(shrunk, &newRank);
  std::mt19937_64 random(99);
  int result = 0;
  for (int i = 0; i < kCallsAfterShrink && result == 0; ++i) {
    const Call c = drawCall(random, 5000 + i, nranks);
    if (issue(c, newRank, shrunk, slots[0], nranks) != ncclSuccess) {
      std::fprintf(stderr, "chaos rank %d: call %d after the shrink: %s\n", rank, i, ncclGetLastError(shrunk));
      result = 10;
    } else if (check(c, newRank, slots[0], i, nranks) != 0) {
      result = 11;
    }
  }
  // The last call above doubles as a barrier: no survivor aborts the parent (which its peers'
  // shrinks use) before all of them are past their shrink.
  ncclCommDestroy(shrunk);
  return result;
}

// Rank exit codes: 0 an error within 2x WEFT_TIMEOUT of the death, a shrink that works and a
// clean abort; 1-2 set-up; 4 a wrong result before the death; 6 the stream ended without an
// error; 7 the error came late; 8 an error before the victim died; 9-11 the shrink
// (shrinkAndCarryOn). The victim dies of SIGKILL (137).
int chaosRank(int rank, const ncclUniqueId& id, int victim, int64_t killAfterMicroseconds, ChaosRecord* record) {
  setenv("WEFT_TIMEOUT", "5", 1);
  StreamRank s;
  if (int failed = joinStream(rank, id, "chaos", 20261204, &s)) return failed;
  if (rank == victim)
    std::thread([record, killAfterMicroseconds] {
      std::this_thread::sleep_for(std::chrono::microseconds(killAfterMicroseconds));
      record->deathNanoseconds.store(monotonicNanoseconds());
      raise(SIGKILL);
    }).detach();
  int result = 6;
  size_t wrong = 0;
  while (s.done < 1000000) {
    if (runNextGroup(s, &wrong) != ncclSuccess) {
      const int64_t death = record->deathNanoseconds.load();
      const int64_t after = monotonicNanoseconds() - death;
      record->errorAfterNanoseconds[rank].store(after);
      std::fprintf(stderr, "chaos rank %d: error %.3f s after rank %d died, at call %d: %s\n", rank, after * 1e-9,
                   victim, s.done, ncclGetLastError(s.last));
      result = death == 0 ? 8 : after > 2 * kChaosTimeoutSeconds * 1e9 ? 7 : 0;
      if (result == 0) result = shrinkAndCarryOn(s.comms[0], rank, victim, s.slots);
      break;
    }
    if (wrong) return 4;
  }
  for (int k = kComms - 1; k >= 0; --k) ncclCommAbort(s.comms[k]);
  return result;
}

TEST(Chaos, KillNineOfARandomRankIsAnErrorForEverySurvivorNotAHang) {
  auto* record = static_cast<ChaosRecord*>(
      mmap(nullptr, sizeof(ChaosRecord), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(record, MAP_FAILED);
  std::mt19937_64 random(7);
  const int trials = chaosTrials();
  int64_t slowest = 0;
  for (int trial = 0; trial < trials; ++trial) {
    const int victim = static_cast<int>(random() % kRanks);
    const int64_t killAfterMicroseconds = 20000 + static_cast<int64_t>(random() % 300000);
    new (record) ChaosRecord{};
    auto outcomes = runRankProcesses(
        kRanks,
        [&](int rank, const ncclUniqueId& id) { return chaosRank(rank, id, victim, killAfterMicroseconds, record); },
        60);
    for (int r = 0; r < kRanks; ++r) {
      if (r == victim) {
        EXPECT_EQ(outcomes[r].exitCode, 128 + SIGKILL) << "trial " << trial << ": the victim, rank " << r;
        continue;
      }
      EXPECT_EQ(outcomes[r].exitCode, 0) << "trial " << trial << ", rank " << r << " (victim " << victim
                                         << ", killed after " << killAfterMicroseconds
                                         << " us): 4 wrong result, 6 no error, 7 late, "
                                         << "8 early, 9-11 shrink, 124 hung";
      slowest = std::max<int64_t>(slowest, record->errorAfterNanoseconds[r].load());
    }
  }
  std::fprintf(stderr, "chaos: %d trials, slowest survivor error %.3f s after the death (WEFT_TIMEOUT=%.0f)\n", trials,
               slowest * 1e-9, kChaosTimeoutSeconds);
  munmap(record, sizeof(ChaosRecord));
}

TEST(Soak, RandomCollectivesAllCheckedMemoryFlat) {
  const int calls = soakCalls();
  auto outcomes = runRankProcesses(
      kRanks, [&](int rank, const ncclUniqueId& id) { return soak(rank, id, calls); }, 120 + calls / 10);
  EXPECT_EQ(describeFailures(outcomes), "") << "3 a call failed, 4 wrong results, 5 memory grew (see stderr)";
}

}  // namespace
