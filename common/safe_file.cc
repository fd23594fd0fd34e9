#include "common/safe_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/status.h"

namespace weft {

ncclResult_t readRegularFile(const std::string& path, size_t maxBytes, const char* what, std::string* text) {
  // O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever; it is refused below.
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return fail(ncclInvalidArgument, "%s %s: cannot open it: %s", what, path.c_str(), strerror(errno));
  struct stat info {};
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    close(fd);
    return fail(ncclInvalidArgument, "%s %s: not a regular file", what, path.c_str());
  }
  text->clear();
  std::vector<char> chunk(65536);
  for (;;) {
    ssize_t n = read(fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      return fail(ncclInvalidArgument, "%s %s: read error: %s", what, path.c_str(), strerror(err));
    }
    if (n == 0) break;
    if (text->size() + static_cast<size_t>(n) > maxBytes) {
      close(fd);
      return fail(ncclInvalidArgument, "%s %s: more than the %zu bytes it may have", what, path.c_str(), maxBytes);
    }
    text->append(chunk.data(), static_cast<size_t>(n));
  }
  close(fd);
  return ncclSuccess;
}

int openLogFile(const std::string& path) {
  return open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0644);
}

ncclResult_t replaceFile(const std::string& path, const std::string& content, const char* what) {
  std::string temporary = path + ".XXXXXX";
  int fd = mkostemp(temporary.data(), O_CLOEXEC);  // a random name, created exclusively (0600)
  if (fd < 0)
    return fail(ncclSystemError, "%s: cannot create a temporary beside %s: %s", what, path.c_str(), strerror(errno));
  size_t written = 0;
  while (written < content.size()) {
    ssize_t n = write(fd, content.data() + written, content.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  // Readable by others (a topology to share), as files written before were; mkostemp made it 0600.
  bool ok = written == content.size() && fchmod(fd, 0644) == 0;
  int err = errno;
  if (close(fd) != 0 && ok) ok = false, err = errno;
  if (ok && rename(temporary.c_str(), path.c_str()) != 0) ok = false, err = errno;
  if (!ok) {
    unlink(temporary.c_str());
    return fail(ncclSystemError, "%s: cannot write %s: %s", what, path.c_str(), strerror(err ? err : EIO));
  }
  return ncclSuccess;
}

std::string expandFilePattern(const std::string& pattern, int rank, const std::string& communicator) {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  if (char* dot = strchr(host, '.')) *dot = 0;
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char next = i + 1 < pattern.size() ? pattern[i + 1] : '\0';
    if (pattern[i] == '%' && next == 'h') {
      out += host;
    } else if (pattern[i] == '%' && next == 'p') {
      out += std::to_string(getpid());
    } else if (pattern[i] == '%' && next == 'r' && rank >= 0) {
      out += std::to_string(rank);
    } else if (pattern[i] == '%' && next == 'c' && !communicator.empty()) {
      out += communicator;
    } else {
      out += pattern[i];
      continue;
    }
    ++i;
  }
  return out;
}

}  // namespace weft
