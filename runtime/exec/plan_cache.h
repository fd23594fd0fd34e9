// The schedules a communicator has prepared, reused while calls keep the same shape (training
// loops do). An entry is found by its whole key, never by the key's hash alone: two shapes
// whose hashes collide must not run each other's schedule.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithms/algorithm.h"
#include "compression/types.h"
#include "nccl.h"
#include "runtime/exec/collective.h"
#include "runtime/exec/executor.h"

namespace weft {

// How a call's schedule is made.
enum class PlanPath : uint8_t {
  Selected,    // the algorithm selection picks (cost model, or WEFT_ALGO / NCCL_ALGO)
  Direct,      // a direct schedule on peers' mapped buffers (runtime/exec/direct_path.h)
  Compressed,  // the compressed all-reduce with the key's codec
};

// Everything that shapes a prepared schedule on one communicator. The communicator's rank,
// ranks, ring order, cost model and slice size are fixed for its life, so they are not here;
// the algorithm and channel count follow from these fields and those.
struct PlanKey {
  PlanPath path = PlanPath::Selected;
  Collective collective = Collective::AllReduce;
  size_t count = 0;
  ncclDataType_t datatype = ncclFloat32;
  bool average = false;              // ncclAvg: the schedule divides
  bool preScale = false;             // a PreMulSum op: the schedule scales
  int root = -1;                     // broadcast, reduce, gather, scatter
  bool inPlace = false;              // NCCL's in-place rule for the collective (callIsInPlace)
  bool sendAliasesRecv = false;      // the Send and Recv buffers are one memory (prepareSchedule)
  size_t blockStride = 0;            // a strided staging slice (CollectiveCall::blockStride)
  compression::CodecConfig codec{};  // PlanPath::Compressed only; default otherwise

  friend bool operator==(const PlanKey& a, const PlanKey& b);
};

// The key of a collective `call` (not send/recv) made on `path`; `codec` for Compressed.
PlanKey planKeyFor(const CollectiveCall& call, PlanPath path,
                   const compression::CodecConfig& codec = compression::CodecConfig{});

uint64_t hashPlanKey(const PlanKey& key);

class PlanCache {
 public:
  using Hash = uint64_t (*)(const PlanKey&);
  static constexpr size_t kDefaultCapacity = 8;

  // `hash` only speeds up the search; tests inject one that collides.
  explicit PlanCache(size_t capacity = kDefaultCapacity, Hash hash = hashPlanKey);

  // The plan stored under a key equal to `key`, or null.
  const PreparedSchedule* find(const PlanKey& key) const;
  // Stores `plan` under `key`, replacing the oldest entry when full, and returns where it now
  // lies. Other entries' plans stay where they are.
  const PreparedSchedule* insert(const PlanKey& key, PreparedSchedule plan);

 private:
  struct Entry {
    bool used = false;
    uint64_t hash = 0;
    PlanKey key;
    PreparedSchedule plan;
  };
  Hash hash_;
  std::vector<Entry> entries_;  // sized once: plans never move
  size_t next_ = 0;             // the entry insert replaces next (round robin)
};

}  // namespace weft
