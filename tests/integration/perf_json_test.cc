// The perf tools' -J document and -I statistics: nccl-tests' definitions, its key names and
// value forms, the secrets kept out of the file, and the file never replacing another.
#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/json_text.h"
#include "perf/perf_iter_stats.h"
#include "perf/perf_json.h"
#include "perf/perf_report.h"

namespace weft::perf {
namespace {

PerfParse parse(std::vector<const char*> args) {
  args.insert(args.begin(), "all_reduce_perf");
  return parsePerfArgs(static_cast<int>(args.size()), args.data());
}

TEST(PerfIterStats, MatchNcclTestsOnItsOwnFigures) {
  // tests/fixtures/perf/nccl_tests_2.19.6_all_reduce_I1.json: nccl-tests' computeIterStats
  // over these four times wrote these statistics.
  IterStats s = computeIterStats({24.1, 23.8, 25.0, 24.4});
  EXPECT_DOUBLE_EQ(s.min, 23.8);
  EXPECT_DOUBLE_EQ(s.max, 25.0);
  EXPECT_NEAR(s.avg, 24.325, 1e-9);
  EXPECT_DOUBLE_EQ(s.p50, 24.4);
  EXPECT_DOUBLE_EQ(s.p95, 25.0);
  EXPECT_DOUBLE_EQ(s.p99, 25.0);
  EXPECT_NEAR(s.stdev, 0.443706, 1e-6);
  EXPECT_NEAR(s.cvPct, 1.824074, 1e-6);
}

TEST(PerfIterStats, NearestRankPercentilesAndSkip) {
  for (int n : {1, 2, 7, 100, 101, 200, 1000}) {
    std::vector<double> times;
    for (int i = n; i >= 1; --i) times.push_back(i * 1.5);  // reversed: sorting matters
    IterStats s = computeIterStats(times);
    auto nearestRank = [&](int p) { return 1.5 * std::ceil(n * p / 100.0); };  // the ceil(n p / 100)-th smallest
    EXPECT_DOUBLE_EQ(s.p95, nearestRank(95)) << n;
    EXPECT_DOUBLE_EQ(s.p99, nearestRank(99)) << n;
    EXPECT_DOUBLE_EQ(s.p50, 1.5 * (n / 2 + 1)) << n;  // nccl-tests: sorted[n / 2]
    EXPECT_NEAR(s.avg, 1.5 * (n + 1) / 2.0, 1e-9) << n;
  }
  IterStats skipped = computeIterStats({1000.0, 1.0, 2.0, 3.0}, 1);
  EXPECT_DOUBLE_EQ(skipped.max, 3.0);
  EXPECT_DOUBLE_EQ(skipped.avg, 2.0);
  EXPECT_NEAR(skipped.stdev, std::sqrt(2.0 / 3.0), 1e-12);
  EXPECT_THROW(computeIterStats({1.0, 2.0}, 2), std::invalid_argument);
  EXPECT_DOUBLE_EQ(computeIterStats({0.0, 0.0}).cvPct, 0.0);
}

TEST(PerfIterStats, SlowestRankPerIteration) {
  // Two ranks, three iterations: rank 1 is slow in iteration 1 only.
  EXPECT_EQ(slowestRankPerIteration({1, 2, 3, 0.5, 9, 1}, 2, 3), (std::vector<double>{1, 9, 3}));
}

TEST(PerfJsonFlags, JIAndK) {
  PerfParse p = parse({"-J", "out.json", "-I", "1", "-K", "2", "-n", "5"});
  ASSERT_EQ(p.kind, PerfParse::kRun) << p.error;
  EXPECT_EQ(p.options.outputFile, "out.json");
  EXPECT_EQ(p.options.perIterTiming, 1);
  EXPECT_EQ(p.options.perIterSkip, 2);
  p = parse({"--output_file=dir/run.JSON", "--per_iter_timing", "1", "--per_iter_skip=1"});
  ASSERT_EQ(p.kind, PerfParse::kRun) << p.error;
  EXPECT_EQ(p.options.outputFile, "dir/run.JSON");
  EXPECT_EQ(p.options.perIterSkip, 1);

  p = parse({"-J", "out.txt"});
  EXPECT_EQ(p.kind, PerfParse::kError);
  EXPECT_NE(p.error.find("-J 'out.txt': only JSON output"), std::string::npos) << p.error;
  EXPECT_EQ(parse({"-J", "json"}).kind, PerfParse::kError);
  EXPECT_EQ(parse({"-I", "2"}).kind, PerfParse::kError);
  p = parse({"-I", "1", "-K", "5", "-n", "5"});
  EXPECT_EQ(p.kind, PerfParse::kError);
  EXPECT_NE(p.error.find("-K 5 leaves none of the 5 iterations"), std::string::npos) << p.error;
  p = parse({"-K", "1"});  // nccl-tests: a warning, and no skip
  ASSERT_EQ(p.kind, PerfParse::kRun);
  EXPECT_EQ(p.options.perIterSkip, 0);
  EXPECT_NE(p.warnings.find("-K ignored"), std::string::npos);
  EXPECT_NE(perfUsage("all_reduce_perf").find("[-J,--output_file"), std::string::npos);
}

TEST(PerfJsonText, FittedColumnsAreNcclTestsGetFloatStr) {
  // Values and texts from nccl-tests' getFloatStr (width 7, as its i_* columns).
  EXPECT_EQ(formatFitted(24.3, 7), "  24.30");
  EXPECT_EQ(formatFitted(1.824074, 7), "   1.82");
  EXPECT_EQ(formatFitted(1234.5, 7), "1234.50");
  EXPECT_EQ(formatFitted(12345.6, 7), "12345.6");
  EXPECT_EQ(formatFitted(123456.7, 7), " 123457");
  EXPECT_EQ(formatFitted(12345678.9, 7), "1.2e+07");
  IterStats s = computeIterStats({24.1, 23.8, 25.0, 24.4});
  EXPECT_EQ(formatIterColumns(s), "    23.80    25.00    25.00     1.82");
  const std::string header = formatColumnHeader(false, true);
  EXPECT_NE(header.find("out-of-place (+ per-iteration)"), std::string::npos);
  EXPECT_NE(header.find("i_min    i_max    i_p99    i_cv%"), std::string::npos);
}

TEST(PerfJsonText, RankLinesReadBack) {
  PerfJsonDevice d;
  ASSERT_TRUE(parseRankLine(formatRankLine(3, 0, 4242, "node-a", 1, 0, "host memory (ncclMemAlloc)"), &d));
  EXPECT_EQ(d.rank, 3);
  EXPECT_EQ(d.group, 0);
  EXPECT_EQ(d.pid, 4242);
  EXPECT_EQ(d.hostname, "node-a");
  EXPECT_EQ(d.device, 1);
  EXPECT_EQ(d.deviceHex, "0x00");
  EXPECT_EQ(d.deviceInfo, "host memory (ncclMemAlloc)");
  // nccl-tests' own line (from the fixture's run).
  ASSERT_TRUE(
      parseRankLine("#  Rank  0 Group  0 Pid  21402 on     node-a device  0 [0000:04:00] NVIDIA H100 80GB HBM3\n", &d));
  EXPECT_EQ(d.deviceHex, "0000:04:00");
  EXPECT_EQ(d.deviceInfo, "NVIDIA H100 80GB HBM3");
  EXPECT_FALSE(parseRankLine("# Using devices\n", &d));
}

TEST(PerfJsonText, SecretsAreRedacted) {
  for (const char* secret : {"WEFT_SECRET=abc", "AWS_SECRET_ACCESS_KEY=abc", "GITHUB_TOKEN=abc", "db_password=abc",
                             "WEFT_TLS_KEY=/etc/key.pem", "MY_CREDENTIALS=abc", "SSH_PRIVATE=abc"}) {
    const std::string out = redactedEnvironmentEntry(secret);
    EXPECT_EQ(out.find("abc"), std::string::npos) << secret;
    EXPECT_NE(out.find("=<redacted>"), std::string::npos) << secret;
  }
  for (const char* plain : {"NCCL_DEBUG=INFO", "PATH=/usr/bin:/key", "NO_EQUALS_SIGN", "WEFT_NET=tcp"})
    EXPECT_EQ(redactedEnvironmentEntry(plain), plain);
}

TEST(PerfJsonText, QuotingIsValidJsonForAnyBytes) {
  EXPECT_EQ(jsonQuote("a\"b\\c\n\t\x01"), "\"a\\\"b\\\\c\\n\\t\\u0001\"");
  EXPECT_EQ(jsonQuote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");  // UTF-8 passes
  EXPECT_EQ(jsonQuote("x\xff"
                      "y"),
            "\"x\\ufffdy\"");                                         // not UTF-8
  EXPECT_EQ(jsonQuote("\xc0\xaf"), "\"\\ufffd\\ufffd\"");             // overlong '/'
  EXPECT_EQ(jsonQuote("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");  // a surrogate
  EXPECT_EQ(jsonQuote("\xe2\x82"), "\"\\ufffd\\ufffd\"");             // truncated
  EXPECT_EQ(jsonNumber(std::nan("")), "\"nan\"");
  EXPECT_EQ(jsonNumber(-INFINITY), "\"-inf\"");
  EXPECT_EQ(jsonNumber(0.5, "%f"), "0.500000");
}

PerfJsonRun smallRun() {
  PerfJsonRun run;
  run.startTime = "2026-12-04 10:00:00";
  run.endTime = "2026-12-04 10:00:01";
  run.args = {"alltoall_perf", "-b", "8"};
  run.env = {"NCCL_DEBUG=WARN"};
  run.ncclVersion = 22805;
  run.options.minBytes = run.options.maxBytes = 8;
  run.devices.push_back({0, 0, 77, "node-a", 0, "0x00", "host memory"});
  PerfJsonResult r;
  r.size = 8;
  r.count = 2;
  r.type = "float";
  r.redop = "none";
  r.root = -1;
  auto placement = [](double timeUs, double algBw, double busBw, int64_t wrong) {
    PerfJsonPlacement p;
    p.timeUs = timeUs;
    p.algBw = algBw;
    p.busBw = busBw;
    p.wrong = wrong;
    return p;
  };
  r.outOfPlace = placement(12.5, 0.25, 0.125, 0);
  r.inPlace = placement(13.0, 0.5, 0.25, -1);  // not checked
  r.actualIterations = 20;
  run.results.push_back(r);
  run.averageBusBw = 0.1875;
  run.errors = {""};
  return run;
}

TEST(PerfJsonDocument, KeysValuesAndOrderAreNcclTests) {
  const std::string doc = formatPerfJson(smallRun());
  EXPECT_EQ(doc.rfind("{\"version\":3,\"start_time\":\"2026-12-04 10:00:00\",\"args\":[\"alltoall_perf\",\"-b\",\"8\"],"
                      "\"env\":[\"NCCL_DEBUG=WARN\"],\"nccl_version\":22805,\"config\":{\"nthreads\":1,\"ngpus\":1,"
                      "\"minimum_bytes\":8,\"maximum_bytes\":8,\"step_bytes\":1048576,\"warmup_iters\":5,",
                      0),
            0u)
      << doc;
  for (const char* fragment :
       {"\"blocking_collectives\":\"false\",\"per_iter_timing\":\"false\",\"per_iter_skip\":0,\"parallel_init\":"
        "\"false\"",
        "\"devices\":[{\"rank\":0,\"group\":0,\"pid\":77,\"hostname\":\"node-a\",\"device\":0,\"device_hex\":\"0x00\","
        "\"device_info\":\"host memory\"}]}",
        "\"root\":\"    -1\"",
        "\"out_of_place\":{\"time\":12.500000,\"alg_bw\":0.250000,\"bus_bw\":0.125000,\"nwrong\":0.000000}",
        "\"in_place\":{\"time\":13.000000,\"alg_bw\":0.500000,\"bus_bw\":0.250000,\"nwrong\":null}",
        "\"actual_iterations\":20,\"experiment_name\":\"\"}]",
        "\"out_of_bounds\":{\"count\":0,\"okay\":\"true\"},\"average_bus_bandwidth\":{\"bandwidth\":0.187500,"
        "\"okay\":\"unchecked\"},\"errors\":[\"\"],\"end_time\":\"2026-12-04 10:00:01\"}\n"})
    EXPECT_NE(doc.find(fragment), std::string::npos) << fragment << "\nin\n" << doc;
  EXPECT_EQ(doc.find("_per_iter"), std::string::npos);
}

TEST(PerfJsonDocument, PerIterationObjectsAndCpuTime) {
  PerfJsonRun run = smallRun();
  run.options.reportCputime = 1;
  run.options.stepFactor = 2;
  PerfJsonPlacement& p = run.results[0].outOfPlace;
  p.hasIterations = true;
  p.timesUs = {2, 4};
  p.statsUs = computeIterStats(p.timesUs);
  p.perProcessUs = {{2, 1}, {1, 4}};
  run.results[0].inPlace.hasIterations = true;
  run.results[0].inPlace.timesUs = {3};
  run.results[0].inPlace.perProcessUs = {{3}};  // one rank: no per-process rows, as nccl-tests
  const std::string doc = formatPerfJson(run);
  EXPECT_NE(doc.find("\"step_factor\":2,"), std::string::npos);
  EXPECT_NE(doc.find("\"out_of_place\":{\"cpu_time\":12.500000,"), std::string::npos);
  EXPECT_NE(doc.find("\"out_of_place_per_iter\":{\"skipped_iterations\":0,\"min_us\":2.000000,\"max_us\":4.000000,"
                     "\"avg_us\":3.000000,\"p50_us\":4.000000,\"p95_us\":4.000000,\"p99_us\":4.000000,\"stdev_us\":"
                     "1.000000,\"cv_pct\":33.333333,\"times_us\":[2.000000,4.000000],\"per_process_max_times_us\":"
                     "[[2.000000,1.000000],[1.000000,4.000000]]},\"in_place\":"),
            std::string::npos)
      << doc;
  EXPECT_NE(doc.find("\"times_us\":[3.000000]},\"actual_iterations\""), std::string::npos) << doc;
}

TEST(PerfJsonFile, NeverReplacesAFile) {
  char dir[] = "/tmp/weft_perf_json_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/run.json";
  std::vector<std::string> chosen;
  for (int k = 0; k < 3; ++k) {
    std::string got, error;
    int fd = createPerfJsonFile(path, &got, &error);
    ASSERT_GE(fd, 0) << error;
    close(fd);
    chosen.push_back(got);
  }
  EXPECT_EQ(chosen, (std::vector<std::string>{path, path + ".0", path + ".1"}));
  std::string got, error;
  EXPECT_LT(createPerfJsonFile(std::string(dir) + "/missing/run.json", &got, &error), 0);
  EXPECT_NE(error.find("cannot create " + std::string(dir) + "/missing/run.json: No such file"), std::string::npos)
      << error;
  for (const std::string& f : chosen) unlink(f.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace weft::perf
