// Logging as NCCL users know it: NCCL_DEBUG=VERSION|WARN|INFO|TRACE picks the level,
// NCCL_DEBUG_SUBSYS (comma list, ^ to exclude) the subsystems, NCCL_DEBUG_FILE the sink
// (%h host, %p pid). Lines start with "host:pid:tid [rank] NCCL LEVEL".
#pragma once

#include <cstdint>

namespace weft {

enum class LogLevel : int { None = 0, Version = 1, Warn = 2, Info = 3, Trace = 4 };

// Subsystems, NCCL's names.
enum LogSubsys : uint32_t {
  kLogInit = 1u << 0,
  kLogColl = 1u << 1,
  kLogP2p = 1u << 2,
  kLogShm = 1u << 3,
  kLogNet = 1u << 4,
  kLogGraph = 1u << 5,
  kLogTune = 1u << 6,
  kLogEnv = 1u << 7,
  kLogAlloc = 1u << 8,
  kLogBootstrap = 1u << 9,
  kLogAll = ~0u,
};

bool logEnabled(LogLevel level, uint32_t subsys);
void logMessage(LogLevel level, const char* file, int line, const char* format, ...)
    __attribute__((format(printf, 4, 5)));

// The rank printed in this thread's log lines (-1: none); returns the previous one.
int setLogRank(int rank);

// This thread's log rank for a scope: one thread may drive several communicators' calls (a
// group over ncclCommInitAll's ranks), so the runtime sets the rank of the call it works on.
class ScopedLogRank {
 public:
  explicit ScopedLogRank(int rank) : previous_(setLogRank(rank)) {}
  ~ScopedLogRank() { setLogRank(previous_); }
  ScopedLogRank(const ScopedLogRank&) = delete;
  ScopedLogRank& operator=(const ScopedLogRank&) = delete;

 private:
  int previous_;
};
// Re-reads the NCCL_DEBUG* variables (ncclResetDebugInit).
void resetLogConfig();

}  // namespace weft

#define WEFT_LOG(level, subsys, ...)                                                                   \
  do {                                                                                                 \
    if (::weft::logEnabled(level, subsys)) ::weft::logMessage(level, __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
#define WEFT_WARN(...) WEFT_LOG(::weft::LogLevel::Warn, ::weft::kLogAll, __VA_ARGS__)
#define WEFT_INFO(subsys, ...) WEFT_LOG(::weft::LogLevel::Info, subsys, __VA_ARGS__)
#define WEFT_TRACE(subsys, ...) WEFT_LOG(::weft::LogLevel::Trace, subsys, __VA_ARGS__)
