// Sizes and durations as people read them, for logs, dumps and tables.
#pragma once

#include <cstdint>
#include <string>

namespace weft {

// "512 B", "16 KiB", "1.5 MiB" (powers of 1024; one decimal unless whole).
std::string bytesText(uint64_t bytes);
// "812.3 us", "12.345 ms", "2.001 s".
std::string durationText(int64_t nanoseconds);

}  // namespace weft
