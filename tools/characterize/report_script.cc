#include "tools/characterize/report_script.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace weft::characterize {
namespace {

bool isFile(const std::string& path) { return !path.empty() && access(path.c_str(), R_OK) == 0; }

std::string executableDirectory() {
  char path[PATH_MAX] = {0};
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return ".";
  std::string text(path, static_cast<size_t>(n));
  return text.substr(0, text.rfind('/'));
}

}  // namespace

std::string reportScriptPath() {
  if (const char* set = std::getenv("WEFT_CHARACTERIZE_SCRIPT"); set && *set) return set;
  for (const char* candidate : {WEFT_SOURCE_SCRIPT, WEFT_INSTALLED_SCRIPT})
    if (isFile(candidate)) return candidate;
  return "";
}

std::string weftInfoPath() { return executableDirectory() + "/weft-info"; }

namespace {

// The command line, or empty with *error set when the script is missing.
std::vector<std::string> scriptCommand(const std::vector<std::string>& args, std::string* error) {
  const std::string script = reportScriptPath();
  if (script.empty()) {
    *error = "characterize_report.py not found (set WEFT_CHARACTERIZE_SCRIPT)";
    return {};
  }
  std::vector<std::string> command{"/usr/bin/python3", script};
  command.insert(command.end(), args.begin(), args.end());
  return command;
}

std::vector<char*> argvOf(std::vector<std::string>& command) {
  std::vector<char*> argv;
  for (std::string& word : command) argv.push_back(word.data());
  argv.push_back(nullptr);
  return argv;
}

}  // namespace

int startReportScriptDetached(const std::vector<std::string>& args, const std::string& logPath, std::string* error) {
  std::vector<std::string> command = scriptCommand(args, error);
  if (command.empty()) return 127;
  std::vector<char*> argv = argvOf(command);
  const int log = open(logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log < 0) {
    *error = "cannot create " + logPath + ": " + std::strerror(errno);
    return 127;
  }
  std::fflush(nullptr);
  const pid_t child = fork();
  if (child == 0) {
    // The grandchild is in a session of its own, out of the launcher's reach, and writes
    // nothing to the launcher's pipes (which would keep it waiting).
    setsid();
    if (fork() != 0) _exit(0);
    dup2(log, 1);
    dup2(log, 2);
    const int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, 0);
    // Nothing of the rank's (its bootstrap listener, its sockets) may outlive it in here.
    close_range(3, ~0U, 0);
    execv(argv[0], argv.data());
    const char* why = "weft-characterize: cannot run /usr/bin/python3 for the report\n";
    (void)!write(2, why, std::strlen(why));
    _exit(127);
  }
  close(log);
  if (child < 0) {
    *error = std::string("fork: ") + std::strerror(errno);
    return 127;
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}
  return 0;
}

int runReportScript(const std::vector<std::string>& args, std::string* error) {
  std::vector<std::string> command = scriptCommand(args, error);
  if (command.empty()) return 127;
  std::vector<char*> argv = argvOf(command);
  const std::string script = command[1];
  std::fflush(nullptr);
  const pid_t child = fork();
  if (child < 0) {
    *error = std::string("fork: ") + std::strerror(errno);
    return 127;
  }
  if (child == 0) {
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}
  if (WIFEXITED(status)) {
    if (WEXITSTATUS(status) == 127) *error = "cannot run /usr/bin/python3 " + script;
    return WEXITSTATUS(status);
  }
  *error = "the report script ended by signal " + std::to_string(WTERMSIG(status));
  return 128 + WTERMSIG(status);
}

}  // namespace weft::characterize
