#include "common/settings.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

#include "common/log.h"
#include "common/status.h"

extern char** environ;

namespace weft {
namespace {

std::vector<std::string> enumValues(const SettingSpec& spec) {
  std::vector<std::string> out;
  std::string all = spec.values ? spec.values : "";
  for (size_t start = 0; start <= all.size();) {
    size_t bar = all.find('|', start);
    if (bar == std::string::npos) bar = all.size();
    out.push_back(all.substr(start, bar - start));
    start = bar + 1;
  }
  return out;
}

bool parseInteger(const char* text, int64_t* out) {
  char* end = nullptr;
  errno = 0;
  long long parsed = strtoll(text, &end, 0);
  if (errno || end == text || *end) return false;
  *out = parsed;
  return true;
}

bool parseReal(const char* text, double* out) {
  char* end = nullptr;
  errno = 0;
  double parsed = strtod(text, &end);
  if (errno || end == text || *end || !std::isfinite(parsed)) return false;
  *out = parsed;
  return true;
}

bool tryParse(const SettingSpec& spec, const char* text, SettingValue* out);

// A bad value is warned about once per variable and value when an accessor meets it (before a
// communicator has rejected it).
void warnInvalidOnce(const SettingSpec& spec, const char* text) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mutex);
  if (!warned.insert(std::string(spec.name) + "=" + text).second) return;
  WEFT_WARN("%s=%s is invalid: expected %s; using %s", spec.name, text, describeValidValues(spec).c_str(),
            spec.defaultText ? spec.defaultText : "the default");
}

// Says once per variable and value which setting the environment chose: some are read on
// every collective.
void logSetOnce(const SettingSpec& spec, const char* text) {
  if (!logEnabled(LogLevel::Info, kLogEnv)) return;
  static std::mutex mutex;
  static std::set<std::string> logged;
  std::lock_guard<std::mutex> lock(mutex);
  if (logged.insert(std::string(spec.name) + "=" + text).second)
    WEFT_INFO(kLogEnv, "%s set by environment to %s", spec.name, text);
}

// The environment's value parsed, or nullopt (unset, or invalid: warned).
std::optional<SettingValue> environmentValue(const SettingSpec& spec) {
  const char* text = settingText(spec.id);
  if (!text) return std::nullopt;
  SettingValue value;
  if (!tryParse(spec, text, &value)) {
    warnInvalidOnce(spec, text);
    return std::nullopt;
  }
  logSetOnce(spec, text);
  return value;
}

SettingValue valueOrDefault(Setting setting) {
  const SettingSpec& spec = settingSpec(setting);
  if (std::optional<SettingValue> value = environmentValue(spec)) return *value;
  SettingValue fallback;
  if (spec.defaultText) tryParse(spec, spec.defaultText, &fallback);  // the rows' defaults are tested to parse
  return fallback;
}

}  // namespace

const SettingSpec& settingSpec(Setting setting) { return allSettings()[static_cast<size_t>(setting)]; }

const SettingSpec* findSetting(const std::string& name) {
  for (const SettingSpec& spec : allSettings())
    if (name == spec.name) return &spec;
  return nullptr;
}

std::string describeValidValues(const SettingSpec& spec) {
  char range[128];
  switch (spec.type) {
    case SettingType::Int:
    case SettingType::Size:
      if (spec.multipleOf > 1)
        snprintf(range, sizeof(range), "a multiple of %lld from %.0f to %.0f", static_cast<long long>(spec.multipleOf),
                 spec.low, spec.high);
      else
        snprintf(range, sizeof(range), "an integer from %.0f to %.0f", spec.low, spec.high);
      return range;
    case SettingType::Double:
      snprintf(range, sizeof(range), "a number from %.15g to %.15g", spec.low, spec.high);
      return range;
    case SettingType::Bool: return "0 or 1";
    case SettingType::String: return "any text";
    case SettingType::Enum: {
      std::string out = "one of ";
      for (const std::string& value : enumValues(spec)) out += (out.size() > 7 ? ", " : "") + value;
      return out;
    }
  }
  return "";
}

namespace {
bool tryParse(const SettingSpec& spec, const char* text, SettingValue* out) {
  SettingValue value;
  value.text = text;
  bool valid = false;
  switch (spec.type) {
    case SettingType::Int:
    case SettingType::Size:
    case SettingType::Bool:
      valid = parseInteger(text, &value.integer) && value.integer >= spec.low && value.integer <= spec.high &&
              (spec.multipleOf <= 1 || value.integer % spec.multipleOf == 0);
      value.real = static_cast<double>(value.integer);
      break;
    case SettingType::Double:
      valid = parseReal(text, &value.real) && value.real >= spec.low && value.real <= spec.high;
      break;
    case SettingType::String: valid = true; break;
    case SettingType::Enum:
      for (const std::string& allowed : enumValues(spec)) valid = valid || allowed == text;
      break;
  }
  if (valid) *out = std::move(value);
  return valid;
}
}  // namespace

ncclResult_t parseSetting(const SettingSpec& spec, const char* text, SettingValue* out) {
  if (!tryParse(spec, text, out))
    return fail(ncclInvalidArgument, "%s=%s is invalid: expected %s", spec.name, text,
                describeValidValues(spec).c_str());
  return ncclSuccess;
}

std::vector<std::string> unsupportedNcclVariables() {
  std::vector<std::string> out;
  for (char** entry = environ; entry && *entry; ++entry) {
    std::string assignment = *entry;
    if (assignment.rfind("NCCL_", 0) != 0) continue;
    if (!findSetting(assignment.substr(0, assignment.find('=')))) out.push_back(assignment);
  }
  return out;
}

bool isValidSettingText(const SettingSpec& spec, const char* text) {
  SettingValue ignored;
  return tryParse(spec, text, &ignored);
}

ncclResult_t validateSettings(SettingsToValidate which) {
  for (const SettingSpec& spec : allSettings()) {
    if (spec.lenient) continue;
    if (which == SettingsToValidate::RankLocal && spec.ranksMustAgree) continue;
    if (which == SettingsToValidate::Agreed && !spec.ranksMustAgree) continue;
    SettingValue ignored;
    if (const char* text = settingText(spec.id)) WEFT_CHECK(parseSetting(spec, text, &ignored));
  }
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mutex);
  for (const std::string& assignment : unsupportedNcclVariables())
    if (warned.insert(assignment).second) WEFT_WARN("%s: not implemented by weft; ignored", assignment.c_str());
  return ncclSuccess;
}

const char* settingText(Setting setting) {
  const char* text = getenv(settingSpec(setting).name);
  return text && *text ? text : nullptr;
}

int64_t settingInt(Setting setting) { return valueOrDefault(setting).integer; }

size_t settingSize(Setting setting) { return static_cast<size_t>(valueOrDefault(setting).integer); }

double settingDouble(Setting setting) { return valueOrDefault(setting).real; }

bool settingBool(Setting setting) { return valueOrDefault(setting).integer != 0; }

std::optional<std::string> settingString(Setting setting) {
  const SettingSpec& spec = settingSpec(setting);
  if (std::optional<SettingValue> value = environmentValue(spec)) return value->text;
  if (spec.defaultText) return std::string(spec.defaultText);
  return std::nullopt;
}

std::optional<int64_t> settingIntIfSet(Setting setting) {
  if (std::optional<SettingValue> value = environmentValue(settingSpec(setting))) return value->integer;
  return std::nullopt;
}

}  // namespace weft
