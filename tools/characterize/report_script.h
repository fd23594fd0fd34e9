// tools/scripts/characterize_report.py, run by rank 0: the fit, the tuning file, the outliers
// and the report are Python (matplotlib draws the plots).
#pragma once

#include <string>
#include <vector>

namespace weft::characterize {

// The script: WEFT_CHARACTERIZE_SCRIPT when set, else the source tree's, else the installed
// copy. "" when none exists.
std::string reportScriptPath();

// Runs /usr/bin/python3 SCRIPT ARGS... and returns its exit status (127: could not start it,
// with *error set). Its output goes to this process's stdout and stderr.
int runReportScript(const std::vector<std::string>& args, std::string* error);

// Starts the script in its own session, its output in logPath, and returns at once (0, or 127
// with *error set): after Ctrl-C a launcher kills the ranks a moment later (weftrun after 2 s),
// and the report of what was measured must still be written.
int startReportScriptDetached(const std::vector<std::string>& args, const std::string& logPath, std::string* error);

// weft-info beside this executable (both are built into tools/ and installed into bin/).
std::string weftInfoPath();

}  // namespace weft::characterize
