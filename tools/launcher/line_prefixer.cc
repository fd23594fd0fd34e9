#include "tools/launcher/line_prefixer.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace weft::launcher {

LinePrefixer::LinePrefixer(std::string prefix, Sink sink, size_t maxLine)
    : prefix_(std::move(prefix)), sink_(std::move(sink)), maxLine_(maxLine ? maxLine : 1) {}

void LinePrefixer::feed(const char* data, size_t size) {
  std::string out;
  size_t pos = 0;
  while (pos < size) {
    const char* nl = static_cast<const char*>(std::memchr(data + pos, '\n', size - pos));
    size_t end = nl ? static_cast<size_t>(nl - data) : size;
    // Cut overlong lines at maxLine_ bytes.
    size_t room = maxLine_ - partial_.size();
    if (end - pos > room) {
      partial_.append(data + pos, room);
      out += prefix_;
      out += partial_;
      out += '\n';
      partial_.clear();
      pos += room;
      continue;
    }
    partial_.append(data + pos, end - pos);
    if (!nl) break;
    out += prefix_;
    out += partial_;
    out += '\n';
    partial_.clear();
    pos = end + 1;
  }
  if (!out.empty()) sink_(out);
}

void LinePrefixer::finish() {
  if (partial_.empty()) return;
  std::string out = prefix_ + partial_ + '\n';
  partial_.clear();
  sink_(out);
}

bool writeAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {  // a non-blocking terminal or pipe: wait
        pollfd p{fd, POLLOUT, 0};
        poll(&p, 1, 100);
        continue;
      }
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace weft::launcher
