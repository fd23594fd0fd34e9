// `weft-info trace merge` (tools/weft_info_trace.cc).
#pragma once

namespace weft {

// argv[1] is "trace"; returns the exit status.
int traceCommand(int argc, char** argv);

}  // namespace weft
