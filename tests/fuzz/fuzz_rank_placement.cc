// A peer's placement record (host, CPU binding, NUMA node, GPU, NIC) from the rank table.
#include <cstddef>
#include <cstdint>

#include "topology/rank_placement.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  weft::RankPlacement placement;
  (void)weft::decodeRankPlacement(data, size, &placement);
  return 0;
}
