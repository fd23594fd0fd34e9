#include "tools/launcher/process_group.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>

#include "tools/launcher/line_prefixer.h"

namespace weft::launcher {
namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();
constexpr double kDrainSec = 0.5;  // how long to wait for output held open by a rank's children

int gSignalPipe[2] = {-1, -1};
const int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP};

void onSignal(int sig) {
  int saved = errno;
  unsigned char b = static_cast<unsigned char>(sig);
  ssize_t ignored = write(gSignalPipe[1], &b, 1);
  (void)ignored;
  errno = saved;
}

double nowSec() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

void say(const std::string& message) { writeAll(2, "weftrun: " + message + "\n"); }

std::string signalName(int sig) {
  const char* name = sigabbrev_np(sig);
  return name ? std::string("SIG") + name : "signal " + std::to_string(sig);
}

struct Rank {
  pid_t pid = -1;
  bool alive = false;
  int fds[2] = {-1, -1};  // stdout, stderr pipes (read ends)
  std::unique_ptr<LinePrefixer> streams[2];
};

const std::vector<int> kUnbound;  // a rank's CPUs when it is not bound

class Job {
 public:
  explicit Job(const LaunchOptions& options) : options_(options), ranks_(options.nranks) {}
  ~Job();
  int run(const std::vector<std::vector<std::string>>& rankEnvs, const std::vector<HandedDescriptor>& handed,
          const std::vector<std::vector<int>>& rankCpus);

 private:
  bool installSignals();
  // Forks and execs one rank; false (with exitCode_ set) if that failed.
  bool spawn(int rank, const std::vector<std::string>& env, const std::vector<int>& inherited,
             const std::vector<int>& cpus);
  void reap();
  void onSignalReceived(int sig);
  void terminateAll(int sig);
  void signalRank(Rank& r, int sig);
  void closeStream(Rank& r, int which);
  bool anyStreamOpen() const;

  const LaunchOptions& options_;
  std::vector<Rank> ranks_;
  int alive_ = 0;
  bool terminating_ = false;
  int exitCode_ = 0;
  double killAt_ = kNever;
  struct sigaction oldActions_[4];
  bool signalsInstalled_ = false;
  bool hupIgnored_ = false;
};

Job::~Job() {
  for (Rank& r : ranks_) {
    for (int w = 0; w < 2; ++w)
      if (r.fds[w] >= 0) close(r.fds[w]);
  }
  if (signalsInstalled_) {
    sigaction(SIGCHLD, &oldActions_[0], nullptr);
    for (int i = 0; i < 3; ++i) sigaction(kForwardedSignals[i], &oldActions_[i + 1], nullptr);
    close(gSignalPipe[0]);
    close(gSignalPipe[1]);
    gSignalPipe[0] = gSignalPipe[1] = -1;
  }
}

bool Job::installSignals() {
  if (pipe2(gSignalPipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    say(std::string("pipe: ") + std::strerror(errno));
    return false;
  }
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigaction(SIGCHLD, &sa, &oldActions_[0]);
  sa.sa_flags = SA_RESTART;
  for (int i = 0; i < 3; ++i) {
    sigaction(kForwardedSignals[i], nullptr, &oldActions_[i + 1]);
    // Under nohup SIGHUP is ignored: keep it so (for the ranks too), rather than forward it.
    if (kForwardedSignals[i] == SIGHUP && oldActions_[i + 1].sa_handler == SIG_IGN) {
      hupIgnored_ = true;
      continue;
    }
    sigaction(kForwardedSignals[i], &sa, nullptr);
  }
  signal(SIGPIPE, SIG_IGN);  // a closed stdout must not kill the launcher (ranks get SIG_DFL back)
  signalsInstalled_ = true;
  return true;
}

bool Job::spawn(int rank, const std::vector<std::string>& env, const std::vector<int>& inherited,
                const std::vector<int>& cpus) {
  int out[2], err[2], status[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    say(std::string("pipe: ") + std::strerror(errno));
    exitCode_ = 1;
    return false;
  }
  if (pipe2(err, O_CLOEXEC) != 0 || pipe2(status, O_CLOEXEC) != 0) {
    say(std::string("pipe: ") + std::strerror(errno));
    close(out[0]), close(out[1]);
    exitCode_ = 1;
    return false;
  }
  // Everything the child needs is prepared before fork: it only calls async-signal-safe code.
  std::vector<char*> argv, envp;
  for (const std::string& a : options_.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  cpu_set_t cpuSet;
  CPU_ZERO(&cpuSet);
  for (int cpu : cpus)
    if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &cpuSet);
  static const char kBindFailed[] = "weftrun: cannot bind this rank to its CPUs; it runs unbound\n";
  pid_t parent = getpid();

  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, &old);
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // the launcher dying must not leave ranks behind
    if (getppid() != parent) _exit(1);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
      if (sig != SIGHUP || !hupIgnored_) sigaction(sig, &dfl, nullptr);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    // Close-on-exec, so that only its copy on fd 0 reaches the rank (dup2 clears the flag).
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull > 0) dup2(devnull, 0);
    if (devnull == 0) fcntl(0, F_SETFD, 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    for (int fd : inherited) fcntl(fd, F_SETFD, 0);
    if (!cpus.empty() && sched_setaffinity(0, sizeof cpuSet, &cpuSet) != 0) {
      ssize_t ignored = write(2, kBindFailed, sizeof kBindFailed - 1);
      (void)ignored;
    }
    execvpe(argv[0], argv.data(), envp.data());
    int e = errno;
    ssize_t ignored = write(status[1], &e, sizeof(e));
    (void)ignored;
    _exit(127);
  }
  int forkErrno = errno;
  if (pid > 0) setpgid(pid, pid);  // also here, so signals reach the group before exec runs
  sigprocmask(SIG_SETMASK, &old, nullptr);
  close(out[1]);
  close(err[1]);
  close(status[1]);
  if (pid < 0) {
    say(std::string("fork: ") + std::strerror(forkErrno));
    close(out[0]), close(err[0]), close(status[0]);
    exitCode_ = 1;
    return false;
  }
  Rank& r = ranks_[rank];
  r.pid = pid;
  r.alive = true;
  ++alive_;
  r.fds[0] = out[0];
  r.fds[1] = err[0];
  std::string prefix = options_.prefix ? "[" + std::to_string(rank) + "] " : "";
  r.streams[0] = std::make_unique<LinePrefixer>(prefix, [](std::string_view s) { writeAll(1, s); });
  r.streams[1] = std::make_unique<LinePrefixer>(prefix, [](std::string_view s) { writeAll(2, s); });

  // The status pipe closes on a successful exec; otherwise it carries exec's errno.
  int execErrno = 0;
  ssize_t n;
  do {
    n = read(status[0], &execErrno, sizeof(execErrno));
  } while (n < 0 && errno == EINTR);
  close(status[0]);
  if (n == static_cast<ssize_t>(sizeof(execErrno))) {
    say("cannot execute '" + options_.command[0] + "': " + std::strerror(execErrno));
    exitCode_ = (execErrno == ENOENT) ? 127 : 126;
    return false;
  }
  return true;
}

void Job::signalRank(Rank& r, int sig) {
  if (!r.alive) return;
  if (kill(-r.pid, sig) != 0) kill(r.pid, sig);
}

void Job::terminateAll(int sig) {
  for (Rank& r : ranks_) signalRank(r, sig);
  if (sig != SIGKILL && killAt_ == kNever) killAt_ = nowSec() + options_.graceSec;
}

void Job::reap() {
  for (;;) {
    int st = 0;
    pid_t pid = waitpid(-1, &st, WNOHANG);
    if (pid <= 0) return;
    for (size_t i = 0; i < ranks_.size(); ++i) {
      Rank& r = ranks_[i];
      if (r.pid != pid || !r.alive) continue;
      r.alive = false;
      --alive_;
      bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
      if (!ok && !terminating_) {
        terminating_ = true;
        exitCode_ = exitCodeForStatus(st);
        int others = alive_;
        say("rank " + std::to_string(i) + " (pid " + std::to_string(pid) + ") " + describeStatus(st) +
            (others ? "; terminating the other " + std::to_string(others) + " rank" + (others > 1 ? "s" : "") : ""));
        terminateAll(SIGTERM);
      }
    }
  }
}

void Job::onSignalReceived(int sig) {
  if (sig == SIGCHLD) {
    reap();
    return;
  }
  if (!terminating_) {
    terminating_ = true;
    exitCode_ = 128 + sig;
    say("received " + signalName(sig) + "; forwarding it to the ranks");
    terminateAll(sig);
  } else if (alive_ > 0) {
    say("received " + signalName(sig) + " again; killing the ranks");
    terminateAll(SIGKILL);
  }
}

void Job::closeStream(Rank& r, int which) {
  if (r.fds[which] < 0) return;
  close(r.fds[which]);
  r.fds[which] = -1;
  r.streams[which]->finish();
}

bool Job::anyStreamOpen() const {
  for (const Rank& r : ranks_)
    if (r.fds[0] >= 0 || r.fds[1] >= 0) return true;
  return false;
}

int Job::run(const std::vector<std::vector<std::string>>& rankEnvs, const std::vector<HandedDescriptor>& handed,
             const std::vector<std::vector<int>>& rankCpus) {
  if (!installSignals()) return 1;
  for (int i = 0; i < options_.nranks; ++i) {
    std::vector<int> inherited;
    for (const HandedDescriptor& h : handed)
      if (h.rank == i) inherited.push_back(h.fd);
    const bool started =
        spawn(i, rankEnvs[i], inherited, i < static_cast<int>(rankCpus.size()) ? rankCpus[i] : kUnbound);
    for (int fd : inherited) close(fd);  // the rank has its own copy now
    if (!started) {
      // Nothing useful can run: stop the ranks already started and wait for them.
      for (Rank& r : ranks_) signalRank(r, SIGKILL);
      for (Rank& r : ranks_) {
        if (r.alive) waitpid(r.pid, nullptr, 0);
        r.alive = false;
      }
      return exitCode_;
    }
  }

  const double start = nowSec();
  const double timeoutAt = options_.timeoutSec > 0 ? start + options_.timeoutSec : kNever;
  double drainUntil = kNever;
  std::vector<char> buffer(1 << 16);
  std::vector<pollfd> pfds;
  std::vector<std::pair<int, int>> owners;  // (rank, stream) of pfds[1..]
  reap();                                   // a rank may have died before the handler was watched

  while (alive_ > 0 || anyStreamOpen()) {
    double now = nowSec();
    if (alive_ == 0 && drainUntil == kNever) drainUntil = now + kDrainSec;
    if (now >= drainUntil) break;  // ranks are gone; their children still hold the pipes
    if (now >= timeoutAt && !terminating_) {
      terminating_ = true;
      exitCode_ = 124;
      char secs[32];
      std::snprintf(secs, sizeof(secs), "%g", options_.timeoutSec);
      say(std::string("time-out after ") + secs + " s; terminating " + std::to_string(alive_) + " rank(s)");
      terminateAll(SIGTERM);
    }
    if (now >= killAt_) {
      if (alive_ > 0) say("killing " + std::to_string(alive_) + " rank(s) that ignored SIGTERM");
      terminateAll(SIGKILL);
      killAt_ = kNever;
    }
    double next = std::min({terminating_ ? kNever : timeoutAt, killAt_, drainUntil});
    int waitMs = next == kNever ? -1 : static_cast<int>(std::ceil(std::max(0.0, next - now) * 1000));

    pfds.clear();
    owners.clear();
    pfds.push_back({gSignalPipe[0], POLLIN, 0});
    for (size_t i = 0; i < ranks_.size(); ++i) {
      for (int w = 0; w < 2; ++w) {
        if (ranks_[i].fds[w] < 0) continue;
        pfds.push_back({ranks_[i].fds[w], POLLIN, 0});
        owners.emplace_back(static_cast<int>(i), w);
      }
    }
    int ready = poll(pfds.data(), pfds.size(), waitMs);
    if (ready < 0) {
      if (errno == EINTR) continue;
      say(std::string("poll: ") + std::strerror(errno));
      terminateAll(SIGKILL);
      break;
    }
    if (pfds[0].revents & POLLIN) {
      unsigned char sigs[64];
      ssize_t n;
      while ((n = read(gSignalPipe[0], sigs, sizeof(sigs))) > 0) {
        for (ssize_t k = 0; k < n; ++k) onSignalReceived(sigs[k]);
      }
    }
    for (size_t k = 1; k < pfds.size(); ++k) {
      if (!(pfds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Rank& r = ranks_[owners[k - 1].first];
      int w = owners[k - 1].second;
      ssize_t n = read(r.fds[w], buffer.data(), buffer.size());
      if (n > 0) {
        r.streams[w]->feed(buffer.data(), static_cast<size_t>(n));
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        closeStream(r, w);
      }
    }
    reap();  // cheap, and covers a SIGCHLD that raced with the signal-pipe read
  }
  for (Rank& r : ranks_) {
    closeStream(r, 0);
    closeStream(r, 1);
  }
  return exitCode_;
}

}  // namespace

int exitCodeForStatus(int st) {
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return 1;
}

std::string describeStatus(int st) {
  if (WIFEXITED(st)) return "exited with code " + std::to_string(WEXITSTATUS(st));
  if (WIFSIGNALED(st)) {
    int sig = WTERMSIG(st);
    const char* what = strsignal(sig);
    return "was killed by signal " + std::to_string(sig) + " (" + signalName(sig) +
           (what ? std::string(": ") + what : std::string()) + ")" + (WCOREDUMP(st) ? ", core dumped" : "");
  }
  return "ended with wait status " + std::to_string(st);
}

int runProcessGroup(const LaunchOptions& options, const std::vector<std::vector<std::string>>& rankEnvs,
                    const std::vector<HandedDescriptor>& handed, const std::vector<std::vector<int>>& rankCpus) {
  Job job(options);
  return job.run(rankEnvs, handed, rankCpus);
}

}  // namespace weft::launcher
