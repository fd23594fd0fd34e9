// NCCL_ALGO's and WEFT_ALGO's values (names, ^ exclusions, per-collective sections); the first
// byte picks which of the two grammars.
#include <cstddef>
#include <cstdint>
#include <string>

#include "algorithms/cost/algorithm_selection.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool ncclNames = data[0] & 1;
  const std::string value(reinterpret_cast<const char*>(data + 1), size - 1);
  weft::AlgorithmPolicy policy;
  (void)weft::parseAlgorithmPolicy(ncclNames ? "NCCL_ALGO" : "WEFT_ALGO", value, ncclNames, &policy);
  return 0;
}
