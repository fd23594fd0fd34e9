// `weft-info status` (tools/weft_info_status.cc).
#pragma once

namespace weft {

// argv[1] is "status"; returns the exit status.
int statusCommand(int argc, char** argv);

}  // namespace weft
