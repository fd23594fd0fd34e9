#include "common/log.h"

#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "common/safe_file.h"
#include "common/settings.h"

namespace weft {

namespace {

struct LogConfig {
  LogLevel level = LogLevel::None;
  uint32_t subsysMask = kLogInit | kLogEnv;  // NCCL's default subsystems
  FILE* sink = stderr;
  char host[64] = "";
};

std::mutex configMutex;
LogConfig config;
std::atomic<bool> configured{false};
thread_local int logRank = -1;

struct SubsysName {
  const char* name;
  uint32_t bit;
};
constexpr SubsysName kSubsysNames[] = {
    {"INIT", kLogInit},   {"COLL", kLogColl},           {"P2P", kLogP2p},     {"SHM", kLogShm},
    {"NET", kLogNet},     {"GRAPH", kLogGraph},         {"TUNING", kLogTune}, {"ENV", kLogEnv},
    {"ALLOC", kLogAlloc}, {"BOOTSTRAP", kLogBootstrap}, {"ALL", kLogAll},
};

LogLevel parseLevel(const char* text) {
  if (!text) return LogLevel::None;
  if (!strcasecmp(text, "VERSION")) return LogLevel::Version;
  if (!strcasecmp(text, "WARN")) return LogLevel::Warn;
  if (!strcasecmp(text, "INFO")) return LogLevel::Info;
  if (!strcasecmp(text, "TRACE")) return LogLevel::Trace;
  if (!strcasecmp(text, "ABORT")) return LogLevel::Warn;
  return LogLevel::None;
}

uint32_t parseSubsys(const char* text) {
  if (!text || !*text) return kLogInit | kLogEnv;
  bool invert = text[0] == '^';
  if (invert) text++;
  uint32_t mask = 0;
  std::string list(text);
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    std::string item = list.substr(start, end - start);
    for (const auto& entry : kSubsysNames)
      if (!strcasecmp(item.c_str(), entry.name)) mask |= entry.bit;
    start = end + 1;
  }
  return invert ? ~mask : mask;
}

void configureLocked() {
  if (config.sink != stderr && config.sink) fclose(config.sink);
  config = LogConfig{};
  gethostname(config.host, sizeof(config.host) - 1);
  if (char* dot = strchr(config.host, '.')) *dot = 0;
  config.level = parseLevel(settingText(Setting::NcclDebug));
  config.subsysMask = parseSubsys(settingText(Setting::NcclDebugSubsys));
  if (const char* file = settingText(Setting::NcclDebugFile)) {
    std::string name = expandFilePattern(file);
    // Close-on-exec (programs the rank starts must not inherit it), never through a symbolic link.
    const int fd = openLogFile(name);
    if (FILE* sink = fd >= 0 ? fdopen(fd, "a") : nullptr) {
      setvbuf(sink, nullptr, _IOLBF, 0);
      config.sink = sink;
    } else if (fd >= 0) {
      close(fd);
    }
  }
  configured.store(true, std::memory_order_release);
}

void ensureConfigured() {
  if (configured.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(configMutex);
  if (!configured.load(std::memory_order_relaxed)) configureLocked();
}

const char* levelName(LogLevel level) {
  switch (level) {
    case LogLevel::Version: return "VERSION";
    case LogLevel::Warn: return "WARN";
    case LogLevel::Info: return "INFO";
    case LogLevel::Trace: return "TRACE";
    default: return "";
  }
}

}  // namespace

bool logEnabled(LogLevel level, uint32_t subsys) {
  ensureConfigured();
  if (level > config.level) return false;
  // WARN and VERSION lines are printed whatever the subsystem filter says, as in NCCL.
  return level <= LogLevel::Warn || (config.subsysMask & subsys) != 0;
}

void logMessage(LogLevel level, const char* file, int line, const char* format, ...) {
  char body[1024];
  va_list args;
  va_start(args, format);
  vsnprintf(body, sizeof(body), format, args);
  va_end(args);
  char rankText[16] = "";
  if (logRank >= 0) snprintf(rankText, sizeof(rankText), " [%d]", logRank);
  long tid = syscall(SYS_gettid);
  std::lock_guard<std::mutex> lock(configMutex);
  if (level == LogLevel::Warn)
    fprintf(config.sink, "%s:%d:%ld%s NCCL WARN %s:%d %s\n", config.host, getpid(), tid, rankText,
            strrchr(file, '/') ? strrchr(file, '/') + 1 : file, line, body);
  else
    fprintf(config.sink, "%s:%d:%ld%s NCCL %s %s\n", config.host, getpid(), tid, rankText, levelName(level), body);
}

int setLogRank(int rank) {
  const int previous = logRank;
  logRank = rank;
  return previous;
}

void resetLogConfig() {
  std::lock_guard<std::mutex> lock(configMutex);
  configureLocked();
}

}  // namespace weft
