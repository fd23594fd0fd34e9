// The values of the settings every rank must agree on (the ranksMustAgree rows of
// common/settings_table.cc), packed in a fixed-size record that travels in the bootstrap table,
// so that ranks compare them once at communicator init instead of building different schedules
// or overrunning each other's slots.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/settings.h"
#include "nccl.h"

namespace weft {

// Room for every ranksMustAgree row (settings_table.cc checks the count at compile time).
constexpr size_t kMaxAgreedSettings = 32;

struct AgreedSettingValue {
  uint64_t hash;   // of the effective value; for a file-valued setting, of the file's content
  char shown[24];  // the value as an error message shows it, cut short if needed
};

// Plain data: it travels as bytes.
struct SettingsDigest {
  uint64_t tableHash;  // of the agreed rows' names: ranks running different tables cannot compare
  uint32_t count;
  uint32_t reserved;
  AgreedSettingValue values[kMaxAgreedSettings];  // the ranksMustAgree rows, in table order
};

// This process's digest, from the environment as it is now (values as the accessors read them;
// an invalid value as itself, so that it agrees with no valid one).
SettingsDigest digestAgreedSettings();

// ncclInvalidArgument when the ranks' digests (indexed by rank) differ, naming the first
// setting that differs, each value and the ranks that hold it, e.g. "WEFT_SHM_SLOT_BYTES
// differs between ranks: 524288 on ranks 0,2-3; 4096 on rank 1". Every rank that compares the
// same table reaches the same verdict and message.
ncclResult_t checkSettingsAgree(const std::vector<const SettingsDigest*>& byRank);

}  // namespace weft
