// Tags every line of one stream with a prefix and hands out only whole lines, so that the
// output of several ranks, written by one process, never interleaves inside a line.
#ifndef WEFT_TOOLS_LAUNCHER_LINE_PREFIXER_H_
#define WEFT_TOOLS_LAUNCHER_LINE_PREFIXER_H_

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace weft::launcher {

class LinePrefixer {
 public:
  // `sink` receives one or more complete lines ("prefix text\n" ...) per call. A line longer
  // than `maxLine` bytes is cut there (ended with '\n') so memory stays bounded.
  using Sink = std::function<void(std::string_view)>;
  LinePrefixer(std::string prefix, Sink sink, size_t maxLine = 1 << 20);

  // Adds bytes read from the stream; passes every line they complete to the sink (in one call).
  void feed(const char* data, size_t size);
  // End of stream: a pending partial line goes out with a '\n' appended.
  void finish();
  bool hasPartialLine() const { return !partial_.empty(); }

 private:
  std::string prefix_;
  Sink sink_;
  size_t maxLine_;
  std::string partial_;  // text of the current line so far, without prefix
};

// Writes all of `data` to `fd`, retrying on EINTR and short writes. False on error (e.g. EPIPE).
bool writeAll(int fd, std::string_view data);

}  // namespace weft::launcher

#endif  // WEFT_TOOLS_LAUNCHER_LINE_PREFIXER_H_
