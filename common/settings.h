// weft's settings: every environment variable the library reads is declared once, as a row of
// the table in common/settings_table.cc (name, type, default, valid values, description, and
// whether all ranks must agree on it), and parsed here in one way. A value outside what its row
// allows fails communicator init (validateSettings: at creation, or for the rows ranks must agree
// on, right after bootstrap) with a message naming the variable, the value and what is valid;
// the typed accessors below fall back to the default (with a warning) when the value is
// invalid. Tests may still set variables with setenv: the accessors read the environment on
// every call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "nccl.h"

namespace weft {

enum class Setting {
  // Logging (parsed leniently by common/log.cc, as NCCL does: it works before any communicator).
  NcclDebug,
  NcclDebugSubsys,
  NcclDebugFile,
  // Bootstrap and network interfaces.
  NcclCommId,
  NcclSocketIfname,
  NcclSocketFamily,
  WeftSecret,
  WeftAuth,
  WeftEncryption,
  WeftTlsCert,
  WeftTlsKey,
  WeftTlsCa,
  WeftBootstrapPort,
  WeftBootstrapFd,
  WeftHostname,
  WeftTimeout,
  // Transports and the shape of schedules.
  WeftTransport,
  NcclShmDisable,
  WeftNet,
  NcclNet,
  NcclNetPlugin,
  NcclIbDisable,
  NcclIbHca,
  NcclIbGidIndex,
  NcclIbTimeout,
  NcclIbRetryCnt,
  NcclIbTc,
  NcclIbSl,
  WeftSliceBytes,
  WeftRingPieceBytes,
  WeftShmSlotBytes,
  WeftShmSlots,
  WeftTcpSlotBytes,
  WeftTcpSlots,
  WeftTcpCongestion,
  NcclNsocksPerthread,
  NcclSocketNthreads,
  WeftUcxSlotBytes,
  WeftUcxSlots,
  WeftUcxDisable,
  WeftIbSlotBytes,
  WeftIbSlots,
  NcclAlgo,
  WeftAlgo,
  NcclMinNchannels,
  NcclMaxNchannels,
  WeftTuningFile,
  WeftDirect,
  WeftDirectMinBytes,
  WeftDirectSendRecv,
  WeftOneShotMaxBytes,
  WeftStagingSliceBytes,
  WeftOwnDeviceBufferBytes,
  WeftCompression,
  // Machine model and host.
  WeftTopoFile,
  NcclTopoFile,
  WeftTopoDumpFile,
  NcclTopoDumpFile,
  WeftBindThreads,
  WeftKernelIsa,
  WeftCompressionIsa,
  // Observability (runtime/exec/collective_record.h).
  WeftRecordEntries,
  WeftDumpOnTimeout,
  WeftDumpFile,
  WeftTrace,
  WeftMetricsFile,
  WeftMetricsInterval,
  WeftStatusServer,
  WeftDumpSignal,
  Count
};

enum class SettingType { Int, Size, Double, Bool, String, Enum };

struct SettingSpec {
  Setting id;
  const char* name;
  SettingType type;
  const char* defaultText;  // parsed like an environment value; nullptr: computed by the reader
  double low;               // Int, Size, Double: the valid range, inclusive
  double high;
  int64_t multipleOf;   // Int, Size: 0, or what the value must be a multiple of
  const char* values;   // Enum: the valid values, separated by '|'
  bool ranksMustAgree;  // it shapes schedules or messages, so every rank needs the same value
  bool lenient;         // parsed by its reader, never an error (NCCL_DEBUG*)
  const char* description;
};

// A parsed value: integer for Int, Size and Bool, real for Double, text for String and Enum.
struct SettingValue {
  int64_t integer = 0;
  double real = 0;
  std::string text;
};

std::span<const SettingSpec> allSettings();
const SettingSpec& settingSpec(Setting setting);
const SettingSpec* findSetting(const std::string& name);

// What the value may be, as the error messages say it ("an integer from 1 to 64").
std::string describeValidValues(const SettingSpec& spec);
// Parses `text` as `spec` says; otherwise returns ncclInvalidArgument with a message like
// "WEFT_SLICE_BYTES=-5 is invalid: expected an integer from 4096 to 1073741824".
ncclResult_t parseSetting(const SettingSpec& spec, const char* text, SettingValue* out);

// Whether `text` is a valid value of `spec`; records nothing.
bool isValidSettingText(const SettingSpec& spec, const char* text);

// Which rows validateSettings checks: the agreed ones (ranksMustAgree) are checked after the
// ranks have compared them, so that a bad value on one rank fails every rank instead of leaving
// the others waiting for it at bootstrap.
enum class SettingsToValidate { All, RankLocal, Agreed };

// Checks every strict setting in the environment (of `which` rows); the first bad one fails
// with parseSetting's message. NCCL_* variables weft does not implement are a warning (once per
// process), so environments tuned for NCCL keep working.
ncclResult_t validateSettings(SettingsToValidate which = SettingsToValidate::All);
// NAME=value of each NCCL_* variable in the environment that no row declares.
std::vector<std::string> unsupportedNcclVariables();

// The environment's text, nullptr when unset or empty. Neither parses nor logs, so that the
// logger itself can use it.
const char* settingText(Setting setting);

// Typed accessors: the environment's value if valid, else the declared default.
int64_t settingInt(Setting setting);
size_t settingSize(Setting setting);
double settingDouble(Setting setting);
bool settingBool(Setting setting);
// String and Enum: the value or the default; nullopt when neither exists.
std::optional<std::string> settingString(Setting setting);
// Int settings whose default the reader computes: nullopt when unset or invalid.
std::optional<int64_t> settingIntIfSet(Setting setting);

}  // namespace weft
