// WEFT_TUNING_FILE's text (link and nics_per_node directives).
#include <cstddef>
#include <cstdint>
#include <string>

#include "algorithms/cost/cost_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  weft::LinkTable table;
  (void)weft::applyTuningText(std::string(reinterpret_cast<const char*>(data), size), "fuzz", &table);
  return 0;
}
