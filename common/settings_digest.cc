#include "common/settings_digest.h"

#include <cstdio>
#include <cstring>
#include <string>

#include "common/hash.h"
#include "common/status.h"

namespace weft {
namespace {

void setShown(AgreedSettingValue* value, const std::string& text) {
  snprintf(value->shown, sizeof(value->shown), "%s", text.c_str());
  if (text.size() >= sizeof(value->shown)) memcpy(value->shown + sizeof(value->shown) - 4, "...", 4);
}

// The value as the typed accessors would return it, in one canonical spelling ("0x1000" and
// "4096" agree), or "unset".
std::string effectiveText(const SettingSpec& spec) {
  switch (spec.type) {
    case SettingType::Int:
      if (!spec.defaultText) {
        std::optional<int64_t> value = settingIntIfSet(spec.id);
        return value ? std::to_string(*value) : "unset";
      }
      return std::to_string(settingInt(spec.id));
    case SettingType::Size: return std::to_string(settingSize(spec.id));
    case SettingType::Bool: return settingBool(spec.id) ? "1" : "0";
    case SettingType::Double: {
      char text[32];
      snprintf(text, sizeof(text), "%.17g", settingDouble(spec.id));
      return text;
    }
    case SettingType::String:
    case SettingType::Enum: return settingString(spec.id).value_or("unset");
  }
  return "unset";
}

AgreedSettingValue digestOne(const SettingSpec& spec) {
  AgreedSettingValue value{};
  // An invalid value reads as the default, but must not agree with it: the rank that has it
  // differs from the others, and ranks that all have it fail alike with its own message.
  if (const char* raw = settingText(spec.id); raw && !isValidSettingText(spec, raw)) {
    value.hash = fnv1a(raw, 2);
    setShown(&value, std::string("invalid ") + raw);
    return value;
  }
  const std::string text = effectiveText(spec);
  value.hash = fnv1a(text);
  setShown(&value, text);
  return value;
}

// "0,2-5,9": runs of three or more ranks as ranges, so that a thousand-rank group stays short.
std::string describeRanks(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t end = i;
    while (end + 1 < ranks.size() && ranks[end + 1] == ranks[end] + 1) ++end;
    if (!out.empty()) out += ",";
    if (end - i >= 2) {
      out += std::to_string(ranks[i]) + "-" + std::to_string(ranks[end]);
    } else {
      out += std::to_string(ranks[i]);
      if (end > i) out += "," + std::to_string(ranks[end]);
    }
    i = end + 1;
    if (out.size() > 200 && i < ranks.size()) return out + ",...";
  }
  return out;
}

struct ValueGroup {
  uint64_t hash;
  const char* shown;
  std::vector<int> ranks;
};

// The distinct values of entry `index`, each with its ranks, in order of their lowest rank.
std::vector<ValueGroup> groupByValue(const std::vector<const SettingsDigest*>& byRank, size_t index) {
  std::vector<ValueGroup> groups;
  for (size_t r = 0; r < byRank.size(); ++r) {
    const AgreedSettingValue& value = byRank[r]->values[index];
    ValueGroup* group = nullptr;
    for (ValueGroup& g : groups)
      if (g.hash == value.hash) group = &g;
    if (!group) group = &groups.emplace_back(ValueGroup{value.hash, value.shown, {}});
    group->ranks.push_back(static_cast<int>(r));
  }
  return groups;
}

std::string describeGroups(const std::vector<ValueGroup>& groups) {
  constexpr size_t kShownGroups = 4;
  std::string out;
  for (size_t g = 0; g < groups.size() && g < kShownGroups; ++g) {
    if (g) out += "; ";
    std::string shown(groups[g].shown, strnlen(groups[g].shown, sizeof(AgreedSettingValue::shown)));
    out += shown + (groups[g].ranks.size() == 1 ? " on rank " : " on ranks ") + describeRanks(groups[g].ranks);
  }
  if (groups.size() > kShownGroups) out += "; and " + std::to_string(groups.size() - kShownGroups) + " more values";
  return out;
}

std::vector<const SettingSpec*> agreedRows() {
  std::vector<const SettingSpec*> rows;
  for (const SettingSpec& spec : allSettings())
    if (spec.ranksMustAgree) rows.push_back(&spec);
  return rows;
}

}  // namespace

SettingsDigest digestAgreedSettings() {
  SettingsDigest digest{};
  for (const SettingSpec* spec : agreedRows()) {
    digest.tableHash = fnv1a(spec->name, digest.tableHash);
    digest.values[digest.count++] = digestOne(*spec);
  }
  return digest;
}

ncclResult_t checkSettingsAgree(const std::vector<const SettingsDigest*>& byRank) {
  if (byRank.empty()) return ncclSuccess;
  for (size_t r = 1; r < byRank.size(); ++r)
    if (byRank[r]->tableHash != byRank[0]->tableHash || byRank[r]->count != byRank[0]->count)
      return fail(ncclInvalidArgument,
                  "ranks 0 and %zu run weft builds with different settings tables; every rank must run the same build",
                  r);
  const std::vector<const SettingSpec*> rows = agreedRows();
  if (byRank[0]->count != rows.size() || rows.size() > kMaxAgreedSettings)
    return fail(ncclInternalError, "settings digest of %u values for %zu agreed settings", byRank[0]->count,
                rows.size());
  std::string first;
  std::string others;
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::vector<ValueGroup> groups = groupByValue(byRank, i);
    if (groups.size() == 1) continue;
    if (first.empty())
      first = std::string(rows[i]->name) + " differs between ranks: " + describeGroups(groups);
    else
      others += std::string(others.empty() ? "" : ", ") + rows[i]->name;
  }
  if (first.empty()) return ncclSuccess;
  return fail(ncclInvalidArgument, "%s%s%s; every rank must set it alike, since it shapes schedules or messages",
              first.c_str(), others.empty() ? "" : " (also differs: ", others.empty() ? "" : (others + ")").c_str());
}

}  // namespace weft
