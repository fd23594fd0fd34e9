// The perf harness' pure functions: flags, sizes, output format, bandwidth formulas, number
// formats, and the data-check inputs/expected values for every datatype and op.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "perf/perf_harness.h"

namespace weft::perf {
namespace {

PerfParse parse(std::vector<const char*> args, const char* env = nullptr) {
  args.insert(args.begin(), "all_reduce_perf");
  return parsePerfArgs(static_cast<int>(args.size()), args.data(), env);
}

std::string rstripLines(const std::string& s) {
  std::string out, line;
  for (char c : s) {
    if (c == '\n') {
      line.erase(line.find_last_not_of(' ') + 1);
      out += line + "\n";
      line.clear();
    } else {
      line += c;
    }
  }
  return out + line;
}

const std::vector<ncclDataType_t> kAllTypes = *parseTypes("all");
const std::vector<ncclRedOp_t> kAllOps = *parseOps("all");

// ---- flags and sizes ----

TEST(PerfSize, ParsesSuffixes) {
  EXPECT_EQ(parseSize("8"), 8u);
  EXPECT_EQ(parseSize("0"), 0u);
  EXPECT_EQ(parseSize("1K"), 1024u);
  EXPECT_EQ(parseSize("1k"), 1024u);
  EXPECT_EQ(parseSize("64M"), 64u << 20);
  EXPECT_EQ(parseSize("1G"), 1u << 30);
  EXPECT_EQ(parseSize("0.5M"), 512u * 1024);
  EXPECT_EQ(parseSize("1MB"), 1u << 20);
  EXPECT_EQ(parseSize("4KiB"), 4096u);
  EXPECT_EQ(parseSize("16 K"), 16384u);
  EXPECT_EQ(parseSize("128B"), 128u);
  EXPECT_FALSE(parseSize(""));
  EXPECT_FALSE(parseSize("abc"));
  EXPECT_FALSE(parseSize("-1"));
  EXPECT_FALSE(parseSize("1X"));
  EXPECT_FALSE(parseSize("1Mx"));
}

TEST(PerfArgs, DefaultsAreNcclTests) {
  PerfParse p = parse({});
  ASSERT_EQ(p.kind, PerfParse::kRun) << p.error;
  const PerfOptions& o = p.options;
  EXPECT_EQ(o.minBytes, 32u << 20);
  EXPECT_EQ(o.maxBytes, 32u << 20);
  EXPECT_EQ(o.stepBytes, 1u << 20);
  EXPECT_EQ(o.stepFactor, 1u);
  EXPECT_EQ(o.iters, 20);
  EXPECT_EQ(o.warmupIters, 5);
  EXPECT_EQ(o.aggIters, 1);
  EXPECT_EQ(o.check, 1);
  EXPECT_EQ(o.ops, std::vector<ncclRedOp_t>{ncclSum});
  EXPECT_EQ(o.types, std::vector<ncclDataType_t>{ncclFloat});
  EXPECT_EQ(o.root, 0);
  EXPECT_EQ(o.blocking, 0);
  EXPECT_EQ(o.average, 1);
  EXPECT_EQ(o.memAlloc, 0);
}

TEST(PerfArgs, ParsesEveryFlag) {
  PerfParse p = parse({"-b", "8",        "-e", "1M", "-f", "4", "-n", "7", "-w", "2",  "-c", "0", "-o", "max",
                       "-d", "bfloat16", "-z", "1",  "-r", "1", "-a", "3", "-m", "4",  "-R", "1", "-C", "1",
                       "-t", "1",        "-g", "1",  "-p", "0", "-y", "0", "-T", "10", "-i", "64"});
  ASSERT_EQ(p.kind, PerfParse::kRun) << p.error;
  const PerfOptions& o = p.options;
  EXPECT_EQ(o.minBytes, 8u);
  EXPECT_EQ(o.maxBytes, 1u << 20);
  EXPECT_EQ(o.stepFactor, 4u);
  EXPECT_EQ(o.stepBytes, 64u);
  EXPECT_EQ(o.iters, 7);
  EXPECT_EQ(o.warmupIters, 2);
  EXPECT_EQ(o.check, 0);
  EXPECT_EQ(o.ops, std::vector<ncclRedOp_t>{ncclMax});
  EXPECT_EQ(o.types, std::vector<ncclDataType_t>{ncclBfloat16});
  EXPECT_EQ(o.blocking, 1);
  EXPECT_EQ(o.root, 1);
  EXPECT_EQ(o.average, 3);
  EXPECT_EQ(o.aggIters, 4);
  EXPECT_EQ(o.memAlloc, 1);
  EXPECT_EQ(o.reportCputime, 1);

  p = parse({"-b8", "--maxbytes=64K", "--stepfactor", "2", "--op=all", "--datatype", "all"});
  ASSERT_EQ(p.kind, PerfParse::kRun) << p.error;
  EXPECT_EQ(p.options.minBytes, 8u);
  EXPECT_EQ(p.options.maxBytes, 65536u);
  EXPECT_EQ(p.options.ops.size(), 5u);
  EXPECT_EQ(p.options.types.size(), 12u);
  EXPECT_EQ(parse({}, "1").options.memAlloc, 1);
  EXPECT_EQ(parse({}, "0").options.memAlloc, 0);
}

TEST(PerfArgs, TypeAndOpNames) {
  const char* names[] = {"int8", "uint8", "int32",  "uint32",   "int64",  "uint64",
                         "half", "float", "double", "bfloat16", "f8e4m3", "f8e5m2"};
  ASSERT_EQ(kAllTypes.size(), 12u);
  for (size_t i = 0; i < 12; ++i) {
    EXPECT_STREQ(typeName(kAllTypes[i]), names[i]);
    auto t = parseTypes(names[i]);
    ASSERT_TRUE(t);
    EXPECT_EQ(t->at(0), kAllTypes[i]);
  }
  EXPECT_EQ(parseTypes("fp16")->at(0), ncclFloat16);
  EXPECT_EQ(parseTypes("bf16")->at(0), ncclBfloat16);
  EXPECT_FALSE(parseTypes("complex"));
  const char* ops[] = {"sum", "prod", "max", "min", "avg"};
  for (int i = 0; i < 5; ++i) {
    EXPECT_STREQ(opName(kAllOps[i]), ops[i]);
    EXPECT_EQ(parseOps(ops[i])->at(0), kAllOps[i]);
  }
  EXPECT_FALSE(parseOps("mulsum"));
  EXPECT_EQ(typeSize(ncclFloat8e4m3), 1u);
  EXPECT_EQ(typeSize(ncclBfloat16), 2u);
  EXPECT_EQ(typeSize(ncclUint64), 8u);
}

TEST(PerfArgs, RejectsBadValues) {
  for (const std::vector<const char*>& args :
       std::vector<std::vector<const char*>>{{"-b", "x"},
                                             {"-b", "2M", "-e", "1M"},
                                             {"-d", "complex"},
                                             {"-o", "xor"},
                                             {"-a", "4"},
                                             {"-t", "2"},
                                             {"-g", "4"},
                                             {"-n", "0"},
                                             {"-n"},
                                             {"-q", "1"},
                                             {"stray"},
                                             {"-z", "2"},
                                             {"-b", "1", "-e", "8", "-i", "0"}}) {
    PerfParse p = parse(args);
    EXPECT_EQ(p.kind, PerfParse::kError) << args[0];
    EXPECT_FALSE(p.error.empty());
  }
  EXPECT_EQ(parse({"-h"}).kind, PerfParse::kHelp);
  EXPECT_NE(perfUsage("all_reduce_perf").find("[-b,--minbytes"), std::string::npos);
}

// -D normal: gradients for the compressed all-reduce; unchecked, floating types only.
TEST(PerfArgs, NormalDataNeedsNoCheckAndAFloatingType) {
  EXPECT_EQ(parse({}).options.data, InputData::Check);
  PerfParse ok = parse({"-D", "normal", "-c", "0", "-d", "bfloat16"});
  ASSERT_EQ(ok.kind, PerfParse::kRun) << ok.error;
  EXPECT_EQ(ok.options.data, InputData::Normal);
  EXPECT_EQ(parse({"--data", "check"}).options.data, InputData::Check);
  PerfParse checked = parse({"-D", "normal"});
  EXPECT_EQ(checked.kind, PerfParse::kError);
  EXPECT_NE(checked.error.find("-c 0"), std::string::npos) << checked.error;
  PerfParse integers = parse({"-D", "normal", "-c", "0", "-d", "int32"});
  EXPECT_EQ(integers.kind, PerfParse::kError);
  EXPECT_NE(integers.error.find("floating type"), std::string::npos) << integers.error;
  PerfParse unknown = parse({"-D", "uniform", "-c", "0"});
  EXPECT_EQ(unknown.kind, PerfParse::kError);
  EXPECT_NE(unknown.error.find("check/normal"), std::string::npos) << unknown.error;
}

// fillNormal: N(0, 1) from the seed: mean near 0, variance near 1, another seed other values.
TEST(PerfData, NormalGradientsHaveTheirMomentsAndFollowTheSeed) {
  const size_t n = 1 << 16;
  std::vector<float> a(n), b(n), again(n);
  fillNormal(a.data(), n, ncclFloat32, 1);
  fillNormal(b.data(), n, ncclFloat32, 2);
  fillNormal(again.data(), n, ncclFloat32, 1);
  double mean = 0, squares = 0;
  for (float x : a) {
    mean += x;
    squares += static_cast<double>(x) * x;
  }
  mean /= n;
  EXPECT_NEAR(mean, 0.0, 0.02);
  EXPECT_NEAR(squares / n - mean * mean, 1.0, 0.03);
  EXPECT_EQ(a, again);
  EXPECT_NE(a, b);
  std::vector<uint16_t> half(n);
  fillNormal(half.data(), n, ncclFloat16, 1);
  for (size_t i = 0; i < 64; ++i)
    EXPECT_NEAR(loadElement(half.data(), i, ncclFloat16), a[i], 1e-3 * (1 + std::fabs(a[i])));
}

TEST(PerfArgs, SizeSteps) {
  PerfOptions o = parse({"-b", "8", "-e", "1M", "-f", "4"}).options;
  EXPECT_EQ(sizeSteps(o), (std::vector<size_t>{8, 32, 128, 512, 2048, 8192, 32768, 131072, 524288}));
  o = parse({"-b", "1K", "-e", "4K", "-i", "1K"}).options;
  EXPECT_EQ(sizeSteps(o), (std::vector<size_t>{1024, 2048, 3072, 4096}));
  o = parse({"-b", "8", "-e", "1M"}).options;  // default step 1M: one size
  EXPECT_EQ(sizeSteps(o), (std::vector<size_t>{8}));
  o = parse({"-b", "0", "-e", "4", "-f", "2"}).options;
  EXPECT_EQ(sizeSteps(o), (std::vector<size_t>{0, 1, 2, 4}));
  o = parse({}).options;
  EXPECT_EQ(sizeSteps(o), (std::vector<size_t>{32u << 20}));
}

// ---- output format ----

TEST(PerfReport, ColumnHeaderIsNcclTests) {
  const std::string expected =
      "#                                                              out-of-place                       in-place\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
      "#wrong\n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n";
  EXPECT_EQ(rstripLines(formatColumnHeader(false)), expected);
  EXPECT_NE(formatColumnHeader(true).find("cputime"), std::string::npos);
}

TEST(PerfReport, RowsAreNcclTests) {
  std::string row = formatRowStart(8388608, 2097152, "float", "sum", -1) + formatRowResult(123.4, 67.98, 101.97, 0) +
                    formatRowResult(9.547, 0.001, 0, -1);
  EXPECT_EQ(row,
            "     8388608       2097152     float     sum      -1    123.4   67.98  101.97      0"
            "     9.55    0.00    0.00    N/A");
  // Column positions are fixed: size ends at 12, type at 40, root at 56.
  EXPECT_EQ(formatRowStart(8, 2, "bfloat16", "none", 0), "           8             2  bfloat16    none       0");
  EXPECT_EQ(formatTime(9.547), "   9.55");
  EXPECT_EQ(formatTime(99.999), " 100.00");
  EXPECT_EQ(formatTime(100.0), "  100.0");
  EXPECT_EQ(formatTime(9999.94), " 9999.9");
  EXPECT_EQ(formatTime(12345.6), "  12346");
  EXPECT_EQ(formatRowResult(1, 1234.5, 2469, 12), "     1.00  1234.50  2469.00     12");
}

TEST(PerfReport, HeaderAndSummaryLines) {
  PerfOptions o = parse({"-b", "8", "-e", "128M", "-f", "2", "-c", "1"}).options;
  EXPECT_EQ(formatRunHeader(o),
            "# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
            "validation: 1 graph: 0\n");
  o = parse({"-b", "1K", "-e", "4K", "-i", "1K", "-z", "1"}).options;
  EXPECT_EQ(formatRunHeader(o),
            "# nThread 1 nGpus 1 minBytes 1024 maxBytes 4096 step: 1024(bytes) warmup iters: 5 iters: 20 agg iters: 1 "
            "validation: 1 graph: 0\n# Blocking Enabled: wait for completion and barrier after each collective \n");
  EXPECT_EQ(formatRankLine(0, 0, 12345, "host", 0, 0, "host memory"),
            "#  Rank  0 Group  0 Pid  12345 on       host device  0 [0x00] host memory\n");
  EXPECT_EQ(formatSummary(0, 1.5), "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 1.5 \n#\n");
  EXPECT_EQ(formatSummary(2, 0.123456789),
            "# Out of bounds values : 2 FAILED\n# Avg bus bandwidth    : 0.123457 \n#\n");
}

TEST(PerfReport, BandwidthFormulas) {
  EXPECT_DOUBLE_EQ(busFactorAllReduce(1), 0.0);
  EXPECT_DOUBLE_EQ(busFactorAllReduce(2), 1.0);
  EXPECT_DOUBLE_EQ(busFactorAllReduce(4), 1.5);
  EXPECT_DOUBLE_EQ(busFactorAllReduce(8), 1.75);
  EXPECT_DOUBLE_EQ(busFactorAllGather(4), 0.75);
  EXPECT_DOUBLE_EQ(busFactorAllGather(1), 0.0);
  EXPECT_DOUBLE_EQ(factorOne(16), 1.0);
  EXPECT_DOUBLE_EQ(factorRanks(16), 16.0);
  // 8 MiB of float in 123.4 us on 4 ranks.
  Bandwidth bw = computeBandwidth(2097152, 4, 123.4e-6, factorOne(4), busFactorAllReduce(4));
  EXPECT_NEAR(bw.algBw, 8388608 / 1e9 / 123.4e-6, 1e-9);
  EXPECT_NEAR(bw.busBw, bw.algBw * 1.5, 1e-9);
  // all_gather counts per rank: bytes = count * size * nranks.
  bw = computeBandwidth(1000, 8, 1e-3, factorRanks(4), busFactorAllGather(4));
  EXPECT_NEAR(bw.algBw, 0.032, 1e-12);
  EXPECT_NEAR(bw.busBw, 0.024, 1e-12);
  EXPECT_EQ(computeBandwidth(10, 4, 0, 1, 1).algBw, 0.0);
  EXPECT_EQ(reportedBytes({2, 8, 2, 2, 0}, 4), 32u);
}

// ---- number formats ----

TEST(PerfData, MiniFloatKnownEncodings) {
  EXPECT_EQ(encodeMiniFloat(1.0, kHalfFormat), 0x3C00u);
  EXPECT_EQ(encodeMiniFloat(-2.0, kHalfFormat), 0xC000u);
  EXPECT_EQ(encodeMiniFloat(65504, kHalfFormat), 0x7BFFu);
  EXPECT_EQ(encodeMiniFloat(65520, kHalfFormat), 0x7C00u);  // rounds to inf
  EXPECT_EQ(encodeMiniFloat(0x1p-24, kHalfFormat), 0x0001u);
  EXPECT_EQ(encodeMiniFloat(1 + 0x1p-11, kHalfFormat), 0x3C00u);      // tie to even
  EXPECT_EQ(encodeMiniFloat(1 + 3 * 0x1p-11, kHalfFormat), 0x3C02u);  // tie to even, up
  EXPECT_EQ(encodeMiniFloat(1.0, kBfloat16Format), 0x3F80u);
  EXPECT_EQ(encodeMiniFloat(256, kBfloat16Format), 0x4380u);
  EXPECT_EQ(encodeMiniFloat(1.0, kE4m3Format), 0x38u);
  EXPECT_EQ(encodeMiniFloat(448, kE4m3Format), 0x7Eu);
  EXPECT_EQ(encodeMiniFloat(1e6, kE4m3Format), 0x7Eu);  // saturates (no inf in e4m3)
  EXPECT_EQ(encodeMiniFloat(0x1p-9, kE4m3Format), 0x01u);
  EXPECT_EQ(encodeMiniFloat(1.0, kE5m2Format), 0x3Cu);
  EXPECT_EQ(encodeMiniFloat(57344, kE5m2Format), 0x7Bu);
  EXPECT_EQ(encodeMiniFloat(1e6, kE5m2Format), 0x7Cu);  // inf
  EXPECT_TRUE(std::isnan(decodeMiniFloat(0x7F, kE4m3Format)));
  EXPECT_TRUE(std::isnan(decodeMiniFloat(0x7E00, kHalfFormat)));
  EXPECT_TRUE(std::isinf(decodeMiniFloat(0x7C, kE5m2Format)));
}

TEST(PerfData, MiniFloatRoundTripsEveryEncoding) {
  for (const MiniFloatFormat* f : {&kHalfFormat, &kBfloat16Format, &kE4m3Format, &kE5m2Format}) {
    const uint32_t count = 1u << (1 + f->expBits + f->manBits);
    for (uint32_t bits = 0; bits < count; ++bits) {
      double v = decodeMiniFloat(bits, *f);
      if (std::isnan(v)) continue;
      ASSERT_EQ(encodeMiniFloat(v, *f), bits) << "format e" << f->expBits << "m" << f->manBits << " bits " << bits;
    }
  }
}

#ifdef __FLT16_MAX__
TEST(PerfData, HalfEncodingMatchesTheCompiler) {
  uint64_t x = 12345;
  for (int i = 0; i < 200000; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    double v = std::ldexp(static_cast<double>(x >> 11) / 9007199254740992.0, static_cast<int>((x >> 3) % 40) - 28);
    if (x & 1) v = -v;
    _Float16 h = static_cast<_Float16>(static_cast<float>(v));
    if (static_cast<double>(static_cast<float>(v)) != v) continue;  // avoid double rounding via float
    uint16_t ref;
    std::memcpy(&ref, &h, 2);
    ASSERT_EQ(encodeMiniFloat(v, kHalfFormat), ref) << v;
  }
}
#endif

TEST(PerfData, LoadStoreEveryType) {
  for (ncclDataType_t t : kAllTypes) {
    std::vector<unsigned char> buf(8 * 4);
    for (double v : {0.0, 1.0, -2.0, 7.0}) {
      if (v < 0 && !typeInfo(t).isSigned) continue;
      storeElement(buf.data(), 2, t, v);
      EXPECT_EQ(loadElement(buf.data(), 2, t), v) << typeName(t);
    }
    EXPECT_EQ(roundToType(1.5, t), typeInfo(t).isFloat ? 1.5 : 2.0) << typeName(t);
  }
  EXPECT_EQ(roundToType(300, ncclInt8), 127);
  EXPECT_EQ(roundToType(-5, ncclUint32), 0);
}

// ---- data check: inputs and expected values for every type, op and rank count ----

double applyOp(int op, double a, double b) {
  switch (op) {
    case ncclProd: return a * b;
    case ncclMax: return std::max(a, b);
    case ncclMin: return std::min(a, b);
    default: return a + b;
  }
}

// Reduces the inputs the way an implementation in the datatype would (rounding after every
// step) in the given rank order.
double reduceInType(const DataGen& d, size_t i, const std::vector<int>& order, bool premultiply) {
  const ncclDataType_t t = d.type();
  const int n = d.nranks();
  auto in = [&](int r) {
    double x = d.input(r, i);
    return premultiply ? roundToType(x / n, t) : x;
  };
  double acc = in(order[0]);
  for (size_t k = 1; k < order.size(); ++k) acc = roundToType(applyOp(d.op(), acc, in(order[k])), t);
  if (d.op() == ncclAvg && !premultiply) acc = roundToType(typeInfo(t).isFloat ? acc / n : std::trunc(acc / n), t);
  return acc;
}

// Tree order: pairwise sums of neighbours, as a tree or recursive-halving algorithm would.
double reduceTree(const DataGen& d, size_t i, int lo, int hi) {
  if (hi - lo == 1) return d.input(lo, i);
  int mid = (lo + hi) / 2;
  return roundToType(applyOp(d.op(), reduceTree(d, i, lo, mid), reduceTree(d, i, mid, hi)), d.type());
}

TEST(PerfData, ExpectedValuesAreExactInEveryTypeOpAndRankCount) {
  for (ncclDataType_t t : kAllTypes) {
    const TypeInfo& info = typeInfo(t);
    for (ncclRedOp_t op : kAllOps) {
      for (int n : {1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 32, 33, 63, 64}) {
        DataGen d(t, op, n, testSeed(t, op, 4096, n & 1, n));
        std::vector<int> forward(n), backward(n);
        for (int r = 0; r < n; ++r) forward[r] = r, backward[r] = n - 1 - r;
        int nonzero = 0;
        for (size_t i = 0; i < 300; ++i) {
          SCOPED_TRACE(std::string(typeName(t)) + " " + opName(op) + " n=" + std::to_string(n) +
                       " i=" + std::to_string(i));
          double independent = d.input(0, i);
          for (int r = 0; r < n; ++r) {
            double x = d.input(r, i);
            ASSERT_EQ(roundToType(x, t), x) << "input not representable";
            ASSERT_EQ(x, std::trunc(x)) << "inputs are integers";
            if (!info.isSigned) {
              ASSERT_GE(x, 0);
            }
            if (r) {
              independent = applyOp(op, independent, x);
            }
            nonzero += x != 0;
          }
          ExpectedValue want = d.reduced(i);
          if (op == ncclAvg) independent /= n;
          if (op == ncclAvg && !info.isFloat) independent = std::trunc(independent);
          EXPECT_EQ(want.value, independent);
          if (op != ncclAvg) {
            EXPECT_EQ(roundToType(want.value, t), want.value) << "result not representable";
            EXPECT_EQ(reduceInType(d, i, forward, false), want.value) << "ring order";
            EXPECT_EQ(reduceInType(d, i, backward, false), want.value) << "reverse order";
            EXPECT_EQ(reduceTree(d, i, 0, n), want.value) << "tree order";
          } else {
            EXPECT_TRUE(d.matches(reduceInType(d, i, forward, false), want)) << "sum then divide";
            EXPECT_TRUE(d.matches(reduceInType(d, i, backward, false), want)) << "sum then divide, reversed";
            if (info.isFloat) {
              EXPECT_TRUE(d.matches(reduceInType(d, i, forward, true), want)) << "premultiply";
            }
          }
          if (!info.isFloat) {
            EXPECT_EQ(want.tolerance, 0.0) << "integers are checked exactly";
          }
        }
        // The data must exercise the reduction, not be all zeros.
        EXPECT_GE(nonzero, (op == ncclProd ? 300 * n : 30)) << typeName(t) << " " << opName(op) << " n=" << n;
      }
    }
  }
}

TEST(PerfData, InputsDependOnRankIndexAndSeed) {
  DataGen a(ncclFloat, ncclSum, 4, 1), b(ncclFloat, ncclSum, 4, 2), again(ncclFloat, ncclSum, 4, 1);
  int sameRank = 0, sameSeed = 0, sameIndex = 0;
  for (size_t i = 0; i < 1000; ++i) {
    EXPECT_EQ(a.input(1, i), again.input(1, i));  // deterministic
    sameRank += a.input(0, i) == a.input(1, i);
    sameSeed += a.input(0, i) == b.input(0, i);
    sameIndex += a.input(0, i) == a.input(0, i + 1);
  }
  EXPECT_LT(sameRank, 50);
  EXPECT_LT(sameSeed, 50);
  EXPECT_LT(sameIndex, 50);
  EXPECT_NE(testSeed(ncclFloat, ncclSum, 8, 0, 1), testSeed(ncclFloat, ncclSum, 8, 1, 1));
  EXPECT_NE(testSeed(ncclFloat, ncclSum, 8, 0, 1), testSeed(ncclFloat, ncclSum, 16, 0, 1));
}

TEST(PerfData, PoisonNeverMatches) {
  for (ncclDataType_t t : kAllTypes) {
    for (int op : {static_cast<int>(ncclSum), static_cast<int>(ncclProd), static_cast<int>(ncclMax),
                   static_cast<int>(ncclMin), static_cast<int>(ncclAvg), kNoOp}) {
      DataGen d(t, op, 3, 7);
      std::vector<unsigned char> buf(8 * 16);
      poisonBuffer(buf.data(), 16, t);
      double poison = loadElement(buf.data(), 5, t);
      for (size_t i = 0; i < 2000; ++i) {
        if (op != kNoOp) {
          ASSERT_FALSE(d.matches(poison, d.reduced(i))) << typeName(t) << " " << op;
        }
        ASSERT_FALSE(d.matches(poison, d.copied(1, i))) << typeName(t) << " " << op;
      }
    }
  }
}

// ---- check logic with an all-reduce description ----

CollCounts allReduceCounts(size_t count, int) { return {count, count, count, 0, 0}; }
ExpectedValue allReduceExpected(const CheckContext& ctx, size_t i) { return ctx.data.reduced(i); }
const CollTest kTestAllReduce = {
    "test", true, false, allReduceCounts, nullptr, allReduceExpected, factorOne, busFactorAllReduce};

TEST(PerfCheck, CountsWrongElements) {
  for (ncclDataType_t t : kAllTypes) {
    for (ncclRedOp_t op : kAllOps) {
      const int n = 5;
      const size_t count = 1000;
      DataGen d(t, op, n, 42);
      CheckContext ctx{d, 1, n, 0, allReduceCounts(count, n)};
      std::vector<unsigned char> send(count * typeSize(t)), recv(count * typeSize(t));
      fillSendBuffer(kTestAllReduce, ctx, send.data());
      for (size_t i = 0; i < count; ++i) ASSERT_EQ(loadElement(send.data(), i, t), d.input(1, i));
      // A correct result: the expected values stored in the type.
      for (size_t i = 0; i < count; ++i) storeElement(recv.data(), i, t, d.reduced(i).value);
      std::string report;
      EXPECT_EQ(countWrong(kTestAllReduce, ctx, recv.data(), &report), 0) << typeName(t) << " " << opName(op) << report;
      EXPECT_TRUE(report.empty());
      // Three corruptions: a wrong value, one rank's input, and poison.
      storeElement(recv.data(), 3, t, d.reduced(3).value + (typeInfo(t).isFloat ? 64 : 1));
      // Just outside the tolerance (fp8 avg allows a lot: premultiplied inputs each round).
      ExpectedValue w = d.reduced(500);
      storeElement(recv.data(), 500, t, w.value + 2 * w.tolerance + 1);
      poisonBuffer(recv.data() + 999 * typeSize(t), 1, t);
      EXPECT_EQ(countWrong(kTestAllReduce, ctx, recv.data(), &report), 3) << typeName(t) << " " << opName(op);
      EXPECT_NE(report.find("element 3 of 1000"), std::string::npos) << report;
    }
  }
}

}  // namespace
}  // namespace weft::perf
