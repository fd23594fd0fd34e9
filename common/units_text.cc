#include "common/units_text.h"

#include <cstdio>

namespace weft {

std::string bytesText(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char text[64];
  std::snprintf(text, sizeof text, v == static_cast<double>(static_cast<uint64_t>(v)) ? "%.0f %s" : "%.1f %s", v,
                units[u]);
  return text;
}

std::string durationText(int64_t ns) {
  char text[64];
  if (ns < 1000000)
    std::snprintf(text, sizeof text, "%.1f us", static_cast<double>(ns) / 1e3);
  else if (ns < 1000000000)
    std::snprintf(text, sizeof text, "%.3f ms", static_cast<double>(ns) / 1e6);
  else
    std::snprintf(text, sizeof text, "%.3f s", static_cast<double>(ns) / 1e9);
  return text;
}

}  // namespace weft
