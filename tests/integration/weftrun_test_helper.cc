// A tiny rank program for weftrun's tests. Usage: weftrun_test_helper MODE [ARGS...]
//   print LINES LEN   LINES lines "rank R line I xxx..." (LEN x's) on stdout and stderr, each
//                     written in several pieces with pauses, then a final partial line
//   env               the launcher variables, one line
//   cpus              "rank R cpus C1,C2,...": the CPUs this process may run on (sched_getaffinity)
//   fail RANK CODE    rank RANK exits with CODE after 0.2 s; the others sleep 60 s
//   killself RANK SIG rank RANK kills itself with SIG after 0.2 s; the others sleep 60 s
//   stubborn RANK     rank RANK exits 1 after 0.2 s; the others ignore SIGTERM and sleep 60 s
//   sleep SECONDS     sleep, then exit 0
//   trap              print "ready", wait for SIGTERM/SIGINT, print "rank R got SIGNAME", exit 0
//   early             rank 0 exits 0 at once, the others after 0.5 s
//   rendezvous        prints "rank R WEFT_BOOTSTRAP_FD=<fd|unset> listening=<0|1> bind=<errno name>":
//                     whether rank R inherited a socket listening on MASTER_PORT, and what
//                     binding 127.0.0.1:MASTER_PORT itself gives (rank 0 holds it for 1 s)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

int rankOf() {
  const char* r = std::getenv("RANK");
  return r ? std::atoi(r) : -1;
}

void writeStr(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = write(fd, s.data() + off, s.size() - off);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

volatile sig_atomic_t gSignal = 0;
void onSignal(int sig) { gSignal = sig; }

void sleepSec(double s) { usleep(static_cast<useconds_t>(s * 1e6)); }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 100;
  std::string mode = argv[1];
  const int rank = rankOf();
  if (mode == "print" && argc >= 4) {
    int lines = std::atoi(argv[2]), len = std::atoi(argv[3]);
    for (int i = 0; i < lines; ++i) {
      std::string line =
          "rank " + std::to_string(rank) + " line " + std::to_string(i) + " " + std::string(len, 'x') + "\n";
      for (int fd : {1, 2}) {
        // Three writes per line, with a pause in the middle, to invite interleaving.
        size_t a = line.size() / 3, b = 2 * line.size() / 3;
        writeStr(fd, line.substr(0, a));
        if (i % 7 == 0) usleep(1000);
        writeStr(fd, line.substr(a, b - a));
        writeStr(fd, line.substr(b));
      }
    }
    writeStr(1, "rank " + std::to_string(rank) + " tail");  // no newline: flushed at exit
    writeStr(2, "rank " + std::to_string(rank) + " errtail");
    return 0;
  }
  if (mode == "env") {
    std::string s;
    for (const char* name : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                             "WEFT_SECRET", "WEFTRUN_TEST_INHERITED"}) {
      const char* v = std::getenv(name);
      s += std::string(s.empty() ? "" : " ") + name + "=" + (v ? v : "<unset>");
    }
    std::printf("%s\n", s.c_str());
    return 0;
  }
  if (mode == "cpus") {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
    std::string list;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &set)) list += (list.empty() ? "" : ",") + std::to_string(cpu);
    std::printf("rank %d cpus %s\n", rankOf(), list.c_str());
    return 0;
  }
  if ((mode == "fail" || mode == "killself" || mode == "stubborn") && argc >= 3) {
    int target = std::atoi(argv[2]);
    if (rank == target) {
      sleepSec(0.2);
      std::printf("rank %d failing\n", rank);
      std::fflush(stdout);
      if (mode == "killself") {
        int sig = argc >= 4 ? std::atoi(argv[3]) : SIGKILL;
        signal(sig, SIG_DFL);
        kill(getpid(), sig);
        return 99;
      }
      return mode == "fail" && argc >= 4 ? std::atoi(argv[3]) : 1;
    }
    if (mode == "stubborn") signal(SIGTERM, SIG_IGN);
    sleepSec(60);
    return 0;
  }
  if (mode == "sleep" && argc >= 3) {
    sleepSec(std::atof(argv[2]));
    return 0;
  }
  if (mode == "trap") {
    struct sigaction sa {};
    sa.sa_handler = onSignal;
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
    std::printf("ready\n");
    std::fflush(stdout);
    for (int i = 0; i < 600 && !gSignal; ++i) usleep(100000);
    std::printf("rank %d got %s\n", rank, gSignal == SIGTERM ? "SIGTERM" : gSignal == SIGINT ? "SIGINT" : "nothing");
    return gSignal ? 0 : 1;
  }
  if (mode == "rendezvous") {
    const char* fdText = std::getenv("WEFT_BOOTSTRAP_FD");
    const char* portText = std::getenv("MASTER_PORT");
    const int port = portText ? std::atoi(portText) : 0;
    int listening = 0;
    if (fdText) {
      sockaddr_in bound{};
      socklen_t length = sizeof bound;
      socklen_t intLength = sizeof listening;
      const int fd = std::atoi(fdText);
      if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &intLength) != 0 ||
          getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) != 0 || ntohs(bound.sin_port) != port)
        listening = 0;
    }
    if (rank != 0) sleepSec(0.3);  // rank 0 holds the socket meanwhile
    int probe = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(probe, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const int bound = bind(probe, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 ? 0 : errno;
    close(probe);
    std::printf("rank %d WEFT_BOOTSTRAP_FD=%s listening=%d bind=%s\n", rank, fdText ? "set" : "unset", listening,
                bound == 0            ? "ok"
                : bound == EADDRINUSE ? "EADDRINUSE"
                                      : std::strerror(bound));
    std::fflush(stdout);
    if (rank == 0) sleepSec(1);
    return 0;
  }
  if (mode == "early") {
    if (rank != 0) sleepSec(0.5);
    std::printf("rank %d done\n", rank);
    return 0;
  }
  return 100;
}
