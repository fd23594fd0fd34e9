// Reading and writing the files a user names (topology, tuning file, debug log, topology dump)
// without trusting what is at the path: only regular files are read, never more than a cap
// (counted while reading, so /dev/zero or a huge file cannot exhaust memory), and opening a
// FIFO never blocks; files are created without following a symbolic link at the last
// component, and replaced atomically through an unpredictably named temporary.
#pragma once

#include <cstddef>
#include <string>

#include "nccl.h"

namespace weft {

// The whole of `path` into *text, or ncclInvalidArgument naming `what` (e.g. "topology file")
// and the reason: not a regular file, unreadable, or more than `maxBytes`.
ncclResult_t readRegularFile(const std::string& path, size_t maxBytes, const char* what, std::string* text);

// Opens `path` for appending log lines: created (mode 0644 less the umask) if missing, refused if
// it is a symbolic link; close-on-exec. -1 with errno set on failure.
int openLogFile(const std::string& path);

// Replaces `path` with `content` atomically: written to a temporary with a random name beside it
// (created exclusively), then renamed over `path`.
ncclResult_t replaceFile(const std::string& path, const std::string& content, const char* what);

// `pattern` with %h replaced by the host name (up to its first dot), %p by the process id and,
// when given, %r by the rank and %c by `communicator`: NCCL_DEBUG_FILE's convention, plus
// the rank and communicator.
std::string expandFilePattern(const std::string& pattern, int rank = -1, const std::string& communicator = "");

}  // namespace weft
