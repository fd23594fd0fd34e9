// Environment parameters. Every knob weft reads goes through here, so each is parsed the
// same way and logged once under NCCL_DEBUG_SUBSYS=ENV.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace weft {

std::optional<std::string> envString(const char* name);
// Integer with a default; a value that does not parse is logged and the default kept.
int64_t envInt(const char* name, int64_t defaultValue);
double envDouble(const char* name, double defaultValue);

// WEFT_TIMEOUT in seconds (default 300): the deadline of every wait.
double timeoutSeconds();

}  // namespace weft
