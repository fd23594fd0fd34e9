#include "runtime/exec/plan_cache.h"

#include <string_view>
#include <utility>

#include "common/hash.h"
#include "runtime/comm/compression_config.h"
#include "runtime/exec/call_schedule.h"

namespace weft {

bool operator==(const PlanKey& a, const PlanKey& b) {
  return a.path == b.path && a.collective == b.collective && a.count == b.count && a.datatype == b.datatype &&
         a.average == b.average && a.preScale == b.preScale && a.root == b.root && a.inPlace == b.inPlace &&
         a.sendAliasesRecv == b.sendAliasesRecv && a.blockStride == b.blockStride && sameCodecConfig(a.codec, b.codec);
}

PlanKey planKeyFor(const CollectiveCall& call, PlanPath path, const compression::CodecConfig& codec) {
  PlanKey key;
  key.path = path;
  key.collective = call.kind.collective();
  key.count = call.count;
  key.datatype = call.datatype;
  key.average = call.op == ncclAvg;
  key.preScale = call.op >= ncclNumOps;
  key.root = call.root;
  key.inPlace = callIsInPlace(call);
  key.sendAliasesRecv = sendAliasesRecv(call);
  key.blockStride = call.blockStride;
  if (path == PlanPath::Compressed) key.codec = codec;
  return key;
}

namespace {

// Folds one field's bytes into the hash.
template <typename T>
uint64_t mix(uint64_t hash, const T& value) {
  return fnv1a(std::string_view(reinterpret_cast<const char*>(&value), sizeof(value)), hash);
}

}  // namespace

uint64_t hashPlanKey(const PlanKey& key) {
  uint64_t hash = 0;
  hash = mix(hash, key.path);
  hash = mix(hash, key.collective);
  hash = mix(hash, key.count);
  hash = mix(hash, key.datatype);
  hash = mix(hash, key.root);
  hash = mix(hash, key.blockStride);
  const uint8_t flags =
      static_cast<uint8_t>(key.average | key.preScale << 1 | key.inPlace << 2 | key.sendAliasesRecv << 3);
  hash = mix(hash, flags);
  hash = mix(hash, key.codec.kind);  // the codec's other fields: equality decides
  return hash;
}

PlanCache::PlanCache(size_t capacity, Hash hash) : hash_(hash), entries_(capacity ? capacity : 1) {}

const PreparedSchedule* PlanCache::find(const PlanKey& key) const {
  const uint64_t hash = hash_(key);
  for (const Entry& entry : entries_)
    if (entry.used && entry.hash == hash && entry.key == key) return &entry.plan;
  return nullptr;
}

const PreparedSchedule* PlanCache::insert(const PlanKey& key, PreparedSchedule plan) {
  Entry& entry = entries_[next_];
  next_ = (next_ + 1) % entries_.size();
  entry.used = true;
  entry.hash = hash_(key);
  entry.key = key;
  entry.plan = std::move(plan);
  return &entry.plan;
}

}  // namespace weft
