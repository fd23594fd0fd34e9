// weftrun's parts: argument parsing, rank environment, line prefixing.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "tools/launcher/launch_env.h"
#include "tools/launcher/launch_options.h"
#include "tools/launcher/line_prefixer.h"

namespace weft::launcher {
namespace {

LaunchParse parse(std::vector<const char*> args) {
  args.insert(args.begin(), "weftrun");
  return parseLaunchArgs(static_cast<int>(args.size()), args.data());
}

TEST(LaunchArgs, ParsesRanksTimeoutAndCommand) {
  LaunchParse p = parse({"-n", "4", "--timeout", "30", "--", "prog", "-n", "7"});
  ASSERT_EQ(p.kind, LaunchParse::kRun) << p.error;
  EXPECT_EQ(p.options.nranks, 4);
  EXPECT_DOUBLE_EQ(p.options.timeoutSec, 30);
  EXPECT_TRUE(p.options.prefix);
  EXPECT_EQ(p.options.command, (std::vector<std::string>{"prog", "-n", "7"}));

  p = parse({"-n3", "prog", "--timeout", "1"});  // options stop at the command
  ASSERT_EQ(p.kind, LaunchParse::kRun);
  EXPECT_EQ(p.options.nranks, 3);
  EXPECT_EQ(p.options.timeoutSec, 0);
  EXPECT_EQ(p.options.command, (std::vector<std::string>{"prog", "--timeout", "1"}));

  p = parse({"--nproc=2", "--timeout=0.5", "--no-prefix", "prog"});
  ASSERT_EQ(p.kind, LaunchParse::kRun);
  EXPECT_EQ(p.options.nranks, 2);
  EXPECT_DOUBLE_EQ(p.options.timeoutSec, 0.5);
  EXPECT_FALSE(p.options.prefix);
}

TEST(LaunchArgs, BindPolicy) {
  EXPECT_EQ(parse({"-n", "2", "prog"}).options.bind, BindPolicy::Auto);
  EXPECT_EQ(parse({"-n", "2", "--bind-to", "core", "prog"}).options.bind, BindPolicy::Core);
  EXPECT_EQ(parse({"-n", "2", "--bind-to=none", "prog"}).options.bind, BindPolicy::None);
  LaunchParse bad = parse({"-n", "2", "--bind-to", "socket", "prog"});
  EXPECT_EQ(bad.kind, LaunchParse::kError);
  EXPECT_NE(bad.error.find("--bind-to 'socket'"), std::string::npos) << bad.error;
}

// Four cores of two hardware threads each (CPU k and k+4 share a core).
const std::vector<std::vector<int>> kCores = {{0, 4}, {1, 5}, {2, 6}, {3, 7}};

TEST(RankBinding, AutoSharesOutWholeCoresInEqualDisjointBlocks) {
  std::string error;
  using Plan = std::vector<std::vector<int>>;
  EXPECT_EQ(planRankCpus(kCores, 2, BindPolicy::Auto, &error), (Plan{{0, 4, 1, 5}, {2, 6, 3, 7}}));
  EXPECT_EQ(planRankCpus(kCores, 3, BindPolicy::Auto, &error), (Plan{{0, 4, 1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(planRankCpus(kCores, 4, BindPolicy::Auto, &error), (Plan{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(planRankCpus(kCores, 1, BindPolicy::Auto, &error), (Plan{{0, 4, 1, 5, 2, 6, 3, 7}}));
  EXPECT_TRUE(planRankCpus(kCores, 5, BindPolicy::Auto, &error).empty());  // outnumbered: unbound
  EXPECT_EQ(error, "");
}

TEST(RankBinding, CoreGivesOneCoreEachAndRefusesMoreRanksThanCores) {
  std::string error;
  using Plan = std::vector<std::vector<int>>;
  EXPECT_EQ(planRankCpus(kCores, 2, BindPolicy::Core, &error), (Plan{{0, 4}, {1, 5}}));
  EXPECT_TRUE(planRankCpus(kCores, 5, BindPolicy::Core, &error).empty());
  EXPECT_NE(error.find("5 ranks but 4 usable cores"), std::string::npos) << error;
  EXPECT_TRUE(planRankCpus(kCores, 2, BindPolicy::None, &error).empty());
  EXPECT_TRUE(planRankCpus({}, 2, BindPolicy::Auto, &error).empty());
}

TEST(RankBinding, UsableCoresAreThisProcesssCpus) {
  std::string error;
  const std::vector<std::vector<int>> cores = usableCores(&error);
  ASSERT_FALSE(cores.empty()) << error;
  cpu_set_t mine;
  CPU_ZERO(&mine);
  ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
  int count = 0;
  for (const std::vector<int>& core : cores)
    for (int cpu : core) {
      EXPECT_TRUE(CPU_ISSET(cpu, &mine)) << cpu;
      ++count;
    }
  EXPECT_EQ(count, CPU_COUNT(&mine));
}

TEST(LaunchArgs, RejectsBadUsage) {
  EXPECT_EQ(parse({}).kind, LaunchParse::kError);
  EXPECT_EQ(parse({"prog"}).kind, LaunchParse::kError);
  EXPECT_EQ(parse({"-n", "0", "prog"}).kind, LaunchParse::kError);
  EXPECT_EQ(parse({"-n", "-1", "prog"}).kind, LaunchParse::kError);
  EXPECT_EQ(parse({"-n", "2x", "prog"}).kind, LaunchParse::kError);
  EXPECT_EQ(parse({"-n", "2"}).kind, LaunchParse::kError);
  EXPECT_EQ(parse({"-n"}).kind, LaunchParse::kError);
  EXPECT_EQ(parse({"-n", "2", "--timeout", "-1", "prog"}).kind, LaunchParse::kError);
  EXPECT_EQ(parse({"-x", "-n", "2", "prog"}).kind, LaunchParse::kError);
  EXPECT_EQ(parse({"-h"}).kind, LaunchParse::kHelp);
  EXPECT_NE(parse({"-n", "2"}).error.find("no command"), std::string::npos);
  EXPECT_NE(parse({"prog"}).error.find("-n"), std::string::npos);
}

TEST(LaunchEnv, SetsRankVariablesAndKeepsTheRest) {
  JobEnv job;
  job.worldSize = 3;
  job.port = 29500;
  job.secret = std::string(32, 'a');
  std::vector<std::string> env = rankEnvironment({"PATH=/bin", "RANK=7", "HOME=/h", "MASTER_PORT=1"}, job, 2);
  auto has = [&](const std::string& e) { return std::find(env.begin(), env.end(), e) != env.end(); };
  EXPECT_TRUE(has("PATH=/bin"));
  EXPECT_TRUE(has("HOME=/h"));
  EXPECT_TRUE(has("RANK=2"));
  EXPECT_FALSE(has("RANK=7"));
  EXPECT_FALSE(has("MASTER_PORT=1"));
  EXPECT_TRUE(has("WORLD_SIZE=3"));
  EXPECT_TRUE(has("LOCAL_RANK=2"));
  EXPECT_TRUE(has("LOCAL_WORLD_SIZE=3"));
  EXPECT_TRUE(has("MASTER_ADDR=127.0.0.1"));
  EXPECT_TRUE(has("MASTER_PORT=29500"));
  EXPECT_TRUE(has("WEFT_SECRET=" + std::string(32, 'a')));
  EXPECT_EQ(env.size(), 9u);
}

TEST(LaunchEnv, OnlyRankZeroGetsTheRendezvousSocket) {
  JobEnv job;
  job.worldSize = 2;
  job.bootstrapFd = 7;
  const std::vector<std::string> base = {"WEFT_BOOTSTRAP_FD=3"};  // from an enclosing launcher
  std::vector<std::string> zero = rankEnvironment(base, job, 0), one = rankEnvironment(base, job, 1);
  EXPECT_EQ(std::count(zero.begin(), zero.end(), "WEFT_BOOTSTRAP_FD=7"), 1);
  for (const auto& env : {zero, one}) EXPECT_EQ(std::find(env.begin(), env.end(), "WEFT_BOOTSTRAP_FD=3"), env.end());
  EXPECT_EQ(
      std::find_if(one.begin(), one.end(), [](const std::string& e) { return e.rfind("WEFT_BOOTSTRAP_FD=", 0) == 0; }),
      one.end());
}

// The port stays taken from the moment it is chosen: binding it again fails.
TEST(LaunchEnv, RendezvousSocketHoldsItsPortAndSecret) {
  std::string error;
  RendezvousSocket rendezvous = openRendezvousSocket("127.0.0.1", &error);
  ASSERT_GE(rendezvous.fd, 0) << error;
  EXPECT_GT(rendezvous.port, 0);
  int listening = 0;
  socklen_t length = sizeof listening;
  ASSERT_EQ(getsockopt(rendezvous.fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length), 0);
  EXPECT_EQ(listening, 1);
  EXPECT_EQ(fcntl(rendezvous.fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC) << "only rank 0 may inherit it";
  int other = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(other, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(rendezvous.port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_NE(bind(other, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  EXPECT_EQ(errno, EADDRINUSE);
  close(other);
  close(rendezvous.fd);
  EXPECT_EQ(openRendezvousSocket("not-an-address", &error).fd, -1);
  EXPECT_NE(error.find("not-an-address"), std::string::npos);
  std::string a = randomSecretHex(&error), b = randomSecretHex(&error);
  EXPECT_EQ(a.size(), 32u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(a, b);
}

TEST(LinePrefixer, EmitsOnlyWholePrefixedLines) {
  std::vector<std::string> calls;
  LinePrefixer p("[1] ", [&](std::string_view s) { calls.emplace_back(s); });
  p.feed("hel", 3);
  EXPECT_TRUE(calls.empty());
  EXPECT_TRUE(p.hasPartialLine());
  p.feed("lo\nwor", 6);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0], "[1] hello\n");
  p.feed("ld\n\nx\n", 6);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[1], "[1] world\n[1] \n[1] x\n");  // several lines: one sink call
  p.feed("tail", 4);
  p.finish();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[2], "[1] tail\n");
  p.finish();  // nothing pending: nothing emitted
  EXPECT_EQ(calls.size(), 3u);
}

TEST(LinePrefixer, CutsOverlongLines) {
  std::string out;
  LinePrefixer p(
      "> ", [&](std::string_view s) { out += s; }, 4);
  p.feed("abcdefghij\n", 11);
  p.feed("abcd", 4);
  p.feed("\n", 1);
  EXPECT_EQ(out, "> abcd\n> efgh\n> ij\n> abcd\n");
}

}  // namespace
}  // namespace weft::launcher
