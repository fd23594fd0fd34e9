// weft-characterize's pure parts: its command line, its sizes and the link class of a pair.
#include <gtest/gtest.h>

#include <vector>

#include "tools/characterize/characterize_options.h"
#include "tools/characterize/host_survey.h"

namespace weft::characterize {
namespace {

CharacterizeParse parse(std::vector<const char*> args) {
  args.insert(args.begin(), "weft-characterize");
  return parseCharacterizeArgs(static_cast<int>(args.size()), args.data());
}

TEST(CharacterizeOptions, DefaultsAndValues) {
  CharacterizeParse p = parse({});
  ASSERT_EQ(p.kind, CharacterizeParse::kRun);
  EXPECT_EQ(p.options.maxBytes, size_t{64} << 20);
  EXPECT_EQ(p.options.outDir, "characterization");
  p = parse(
      {"--out",      "d",        "--max-size", "1M",    "--min-size", "1K", "--factor",      "2",
       "-n",         "7",        "-w",         "0",     "--budget",   "90", "--collectives", "all_reduce,broadcast",
       "--baseline", "old.json", "--rules",    "r.txt", "--no-report"});
  ASSERT_EQ(p.kind, CharacterizeParse::kRun) << p.error;
  EXPECT_EQ(p.options.outDir, "d");
  EXPECT_EQ(p.options.maxBytes, size_t{1} << 20);
  EXPECT_EQ(p.options.minBytes, size_t{1024});
  EXPECT_EQ(p.options.factor, 2);
  EXPECT_EQ(p.options.iters, 7);
  EXPECT_EQ(p.options.warmup, 0);
  EXPECT_DOUBLE_EQ(p.options.budgetSeconds, 90);
  EXPECT_EQ(p.options.collectives, (std::vector<std::string>{"all_reduce", "broadcast"}));
  EXPECT_FALSE(p.options.report);
}

TEST(CharacterizeOptions, BadInputNamesTheArgument) {
  struct Case {
    std::vector<const char*> args;
    const char* named;
  };
  for (const Case& c : std::vector<Case>{{{"--max-size", "lots"}, "--max-size"},
                                         {{"--budget", "-3"}, "--budget"},
                                         {{"--factor", "1"}, "--factor"},
                                         {{"-n", "0"}, "-n"},
                                         {{"--min-size", "2M", "--max-size", "1M"}, "--min-size"},
                                         {{"--rules", "r.txt"}, "--rules"},
                                         {{"--frobnicate", "1"}, "--frobnicate"},
                                         {{"--out"}, "--out"}}) {
    CharacterizeParse p = parse(c.args);
    EXPECT_EQ(p.kind, CharacterizeParse::kError) << c.named;
    EXPECT_NE(p.error.find(c.named), std::string::npos) << p.error;
  }
  EXPECT_EQ(parse({"--help"}).kind, CharacterizeParse::kHelp);
}

TEST(CharacterizeOptions, SweepSizes) {
  EXPECT_EQ(sweepSizes(8, 128, 4), (std::vector<size_t>{8, 32, 128}));
  EXPECT_EQ(sweepSizes(8, 127, 4), (std::vector<size_t>{8, 32}));
  EXPECT_EQ(sweepSizes(1024, 1024, 2), (std::vector<size_t>{1024}));
  // No overflow near the top of size_t.
  const std::vector<size_t> top = sweepSizes(size_t{1} << 62, ~size_t{0}, 4);
  EXPECT_EQ(top, (std::vector<size_t>{size_t{1} << 62}));
}

TEST(CharacterizeOptions, LinkClassOfAPair) {
  const RankSite a{"h0", "h0", 0, 0}, sameNuma{"h0", "h0", 0, 0}, otherNuma{"h0", "h0", 1, 0},
      otherSocket{"h0", "h0", 2, 1}, unbound{"h0", "h0", -1, -1}, otherHost{"h1", "h1", 0, 0};
  EXPECT_EQ(linkClass(a, sameNuma), "same_numa");
  EXPECT_EQ(linkClass(a, otherNuma), "same_socket");
  EXPECT_EQ(linkClass(a, otherSocket), "across_sockets");
  EXPECT_EQ(linkClass(a, unbound), "same_host");
  EXPECT_EQ(linkClass(a, otherHost), "across_hosts");
}

}  // namespace
}  // namespace weft::characterize
