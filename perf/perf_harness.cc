// The runner: communicator, buffers, warm-up, timing, checking and nccl-tests' output.
#include "perf/perf_harness.h"

#include <sys/mman.h>
#include <unistd.h>

#include <libgen.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace weft::perf {
namespace {

constexpr size_t kPage = 4096;
constexpr size_t kRankLine = 256;  // bytes per rank in the gathered "#  Rank" lines

struct PerfError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

double nowSec() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::string hostName() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  if (char* dot = std::strchr(host, '.')) *dot = '\0';  // as nccl-tests prints it
  return host;
}

int localRankFromEnv() {
  for (const char* name :
       {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "PMI_LOCAL_RANK"}) {
    if (const char* v = std::getenv(name)) return std::atoi(v);
  }
  return 0;
}

class Runner {
 public:
  Runner(const CollTest& test, const PerfOptions& options, ncclComm_t comm) : test_(test), o_(options), comm_(comm) {}
  ~Runner() { freeBuffers(); }

  // Returns the number of failed checks.
  int run();

 private:
  void check(ncclResult_t r, const char* what) {
    if (r == ncclSuccess) return;
    std::string last = ncclGetLastError(comm_) ? ncclGetLastError(comm_) : "";
    throw PerfError(std::string(what) + " failed: " + ncclGetErrorString(r) +
                    (last.empty() ? "" : " ('" + last + "')"));
  }
  void print(const std::string& s) {
    if (rank_ == 0) std::fputs(s.c_str(), stdout);
  }
  double allReduceDouble(double v, ncclRedOp_t op);
  int64_t allReduceSum(int64_t v);
  void barrier();
  void printHeader();
  void allocBuffers();
  void freeBuffers();
  void* alloc(size_t bytes);
  void runOnce(const void* send, void* recv, const CollCounts& c, ncclDataType_t type, ncclRedOp_t op);
  void warmup(ncclDataType_t type, ncclRedOp_t op, size_t bytes);
  void timeTest(ncclDataType_t type, ncclRedOp_t op);
  void benchTime(ncclDataType_t type, ncclRedOp_t op, size_t bytes, const CollCounts& c, int inPlace);

  const CollTest& test_;
  PerfOptions o_;
  ncclComm_t comm_;
  int rank_ = 0, nranks_ = 1;
  char* send_ = nullptr;
  char* recv_ = nullptr;
  size_t sendBytes_ = 0, recvBytes_ = 0;
  double busBwSum_ = 0;
  int busBwCount_ = 0;
  int errors_ = 0;
  int rep_ = 0;
  int root_ = 0;  // the root of the current pass (-r, or each rank in turn with -r -1)
};

double Runner::allReduceDouble(double v, ncclRedOp_t op) {
  double out = 0;
  check(ncclAllReduce(&v, &out, 1, ncclFloat64, op, comm_, nullptr), "ncclAllReduce(double)");
  return out;
}

int64_t Runner::allReduceSum(int64_t v) {
  int64_t out = 0;
  check(ncclAllReduce(&v, &out, 1, ncclInt64, ncclSum, comm_, nullptr), "ncclAllReduce(int64)");
  return out;
}

void Runner::barrier() {
  int32_t one = 1, out = 0;
  check(ncclAllReduce(&one, &out, 1, ncclInt32, ncclSum, comm_, nullptr), "ncclAllReduce(barrier)");
}

void Runner::printHeader() {
  print(formatRunHeader(o_));
  print("#\n# Using devices\n");
  // Every rank's line, gathered in rank order with an all-reduce of zero-padded slots.
  std::vector<uint8_t> mine(kRankLine * nranks_, 0), all(kRankLine * nranks_, 0);
  std::string line = formatRankLine(rank_, 0, static_cast<int>(getpid()), hostName(), localRankFromEnv(), 0,
                                    o_.memAlloc ? "host memory (ncclMemAlloc)" : "host memory");
  line.resize(std::min(line.size(), kRankLine - 1));
  std::memcpy(mine.data() + kRankLine * rank_, line.data(), line.size());
  check(ncclAllReduce(mine.data(), all.data(), mine.size(), ncclUint8, ncclSum, comm_, nullptr),
        "ncclAllReduce(rank lines)");
  for (int r = 0; r < nranks_; ++r) print(std::string(reinterpret_cast<const char*>(all.data() + kRankLine * r)));
  print("#\n");
  print(formatColumnHeader(o_.reportCputime != 0));
  if (rank_ == 0) std::fflush(stdout);
}

void* Runner::alloc(size_t bytes) {
  void* p = nullptr;
  if (o_.memAlloc) {
    check(ncclMemAlloc(&p, bytes), "ncclMemAlloc");
  } else {
    p = std::aligned_alloc(kPage, bytes);
    if (!p) throw PerfError("cannot allocate " + std::to_string(bytes) + " bytes");
#ifdef MADV_HUGEPAGE
    madvise(p, bytes, MADV_HUGEPAGE);
#endif
  }
  std::memset(p, 0, bytes);  // pre-fault every page now, not inside the timed loop
  return p;
}

void Runner::allocBuffers() {
  // As nccl-tests: sizes from the test's counts at maxBytes (elements of one byte), at least
  // maxBytes each, so every datatype and placement fits.
  CollCounts c = collCounts(test_, o_.maxBytes, 1, nranks_);
  size_t need = std::max({o_.maxBytes, c.sendCount, c.recvCount, c.sendInplaceOffset * nranks_ + c.sendCount,
                          c.recvInplaceOffset * nranks_ + c.recvCount});
  size_t bytes = std::max(kPage, (need + 64 + kPage - 1) / kPage * kPage);
  sendBytes_ = recvBytes_ = bytes;
  send_ = static_cast<char*>(alloc(bytes));
  recv_ = static_cast<char*>(alloc(bytes));
}

void Runner::freeBuffers() {
  for (char** p : {&send_, &recv_}) {
    if (!*p) continue;
    if (o_.memAlloc) {
      ncclMemFree(*p);
    } else {
      std::free(*p);
    }
    *p = nullptr;
  }
}

void Runner::runOnce(const void* send, void* recv, const CollCounts& c, ncclDataType_t type, ncclRedOp_t op) {
  check(test_.run(send, recv, c.paramCount, type, op, root_, comm_, nullptr), test_.name);
}

void Runner::warmup(ncclDataType_t type, ncclRedOp_t op, size_t bytes) {
  CollCounts c = collCounts(test_, bytes / typeSize(type), typeSize(type), nranks_);
  for (int i = 0; i < o_.warmupIters; ++i) runOnce(send_, recv_, c, type, op);
}

void Runner::benchTime(ncclDataType_t type, ncclRedOp_t op, size_t bytes, const CollCounts& c, int inPlace) {
  const size_t ts = typeSize(type);
  const int dataOp = test_.reduces ? static_cast<int>(op) : kNoOp;
  const char* sendPtr = inPlace ? recv_ + c.sendInplaceOffset * ts * rank_ : send_;
  char* recvPtr = inPlace ? recv_ + c.recvInplaceOffset * ts * rank_ : recv_;

  auto initData = [&](int rep) {
    DataGen data(type, dataOp, nranks_, testSeed(type, dataOp, bytes, inPlace, rep));
    CheckContext ctx{data, rank_, nranks_, root_, c};
    poisonBuffer(recv_, recvBytes_ / ts, type);
    fillSendBuffer(test_, ctx, const_cast<char*>(sendPtr));
    return data;
  };

  if (o_.check) initData(0);
  runOnce(sendPtr, recvPtr, c, type, op);  // sync, as nccl-tests
  barrier();

  const double t0 = nowSec();
  for (int iter = 0; iter < o_.iters; ++iter) {
    if (o_.aggIters > 1) check(ncclGroupStart(), "ncclGroupStart");
    for (int a = 0; a < o_.aggIters; ++a) runOnce(sendPtr, recvPtr, c, type, op);
    if (o_.aggIters > 1) check(ncclGroupEnd(), "ncclGroupEnd");
    if (o_.blocking) barrier();
  }
  double sec = (nowSec() - t0) / (static_cast<double>(o_.iters) * o_.aggIters);
  switch (o_.average) {
    case 0: sec = allReduceDouble(rank_ == 0 ? sec : 0.0, ncclSum); break;
    case 2: sec = allReduceDouble(sec, ncclMin); break;
    case 3: sec = allReduceDouble(sec, ncclMax); break;
    default: sec = allReduceDouble(sec, ncclSum) / nranks_; break;
  }
  Bandwidth bw = computeBandwidth(c.paramCount, ts, sec, test_.algFactor(nranks_), test_.busFactor(nranks_));

  const int checks = (inPlace && !test_.checksInPlace) ? 0 : o_.check;
  int64_t wrong = checks ? 0 : -1;
  for (int k = 0; k < checks; ++k) {
    DataGen data = initData(++rep_);
    runOnce(sendPtr, recvPtr, c, type, op);
    CheckContext ctx{data, rank_, nranks_, root_, c};
    std::string report;
    int64_t mine = countWrong(test_, ctx, recvPtr, &report);
    if (!report.empty()) {
      std::fprintf(stderr, "%s: %s %s %s %zu bytes%s %s:\n%s", test_.name, typeName(type),
                   test_.reduces ? opName(op) : "none", inPlace ? "in-place" : "out-of-place", bytes,
                   test_.rooted ? (" root " + std::to_string(root_)).c_str() : "", "wrong results", report.c_str());
    }
    wrong = allReduceSum(mine);
    if (wrong) break;
  }
  if (wrong > 0) ++errors_;
  print(formatRowResult(sec * 1e6, bw.algBw, bw.busBw, wrong));
  busBwSum_ += bw.busBw;
  ++busBwCount_;
}

void Runner::timeTest(ncclDataType_t type, ncclRedOp_t op) {
  barrier();
  warmup(type, op, o_.maxBytes);
  warmup(type, op, o_.minBytes);
  const size_t ts = typeSize(type);
  for (size_t size : sizeSteps(o_)) {
    CollCounts c = collCounts(test_, size / ts, ts, nranks_);
    print(formatRowStart(reportedBytes(c, ts), c.paramCount, typeName(type), test_.reduces ? opName(op) : "none",
                         test_.rooted ? root_ : -1));
    benchTime(type, op, size, c, 0);
    benchTime(type, op, size, c, 1);
    print("\n");
  }
}

int Runner::run() {
  check(ncclCommCount(comm_, &nranks_), "ncclCommCount");
  check(ncclCommUserRank(comm_, &rank_), "ncclCommUserRank");
  if (test_.rooted && o_.root >= nranks_)
    throw PerfError("root " + std::to_string(o_.root) + " is not a rank (" + std::to_string(nranks_) + " ranks)");
  printHeader();
  if (const char* reason = test_.skipReason ? test_.skipReason(nranks_) : nullptr) {
    print(std::string(reason) + "\n");  // nccl-tests: the table stays empty and the run succeeds
  } else {
    allocBuffers();
    std::vector<ncclRedOp_t> ops = test_.reduces ? o_.ops : std::vector<ncclRedOp_t>{ncclSum};
    // As nccl-tests: -r -1 runs every root in turn (rooted collectives only).
    std::vector<int> roots;
    if (test_.rooted && o_.root < 0) {
      for (int r = 0; r < nranks_; ++r) roots.push_back(r);
    } else {
      roots.push_back(o_.root < 0 ? 0 : o_.root);
    }
    for (ncclDataType_t type : o_.types) {
      for (int root : roots) {
        root_ = root;
        for (ncclRedOp_t op : ops) timeTest(type, op);
      }
    }
  }
  print(formatSummary(errors_, busBwCount_ ? busBwSum_ / busBwCount_ : 0.0));
  print("\n");
  return errors_;
}

}  // namespace

int runPerfTool(int argc, char** argv, const CollTest& test) {
  setlinebuf(stdout);
  std::string prog = argc > 0 ? basename(argv[0]) : test.name;
  PerfParse parsed = parsePerfArgs(argc, argv, std::getenv("WEFT_PERF_MEMALLOC"));
  if (parsed.kind == PerfParse::kHelp) {
    std::fputs(perfUsage(prog).c_str(), stdout);
    return 0;
  }
  if (parsed.kind == PerfParse::kError) {
    std::fprintf(stderr, "%s: %s\n%s", prog.c_str(), parsed.error.c_str(), perfUsage(prog).c_str());
    return 2;
  }
  if (!parsed.warnings.empty()) std::fputs(parsed.warnings.c_str(), stderr);

  ncclComm_t comm = nullptr;
  ncclResult_t r = weftCommInitFromEnv(&comm);
  if (r != ncclSuccess) {
    const char* last = ncclGetLastError(nullptr);
    std::fprintf(stderr, "%s: weftCommInitFromEnv failed: %s%s%s\n", prog.c_str(), ncclGetErrorString(r),
                 last && *last ? ": " : "", last ? last : "");
    return 1;
  }
  int errors = 0;
  try {
    Runner runner(test, parsed.options, comm);
    errors = runner.run();
  } catch (const PerfError& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: %s\n", prog.c_str(), e.what());
    ncclCommAbort(comm);
    return 1;
  }
  r = ncclCommDestroy(comm);
  if (r != ncclSuccess) {
    std::fprintf(stderr, "%s: ncclCommDestroy failed: %s\n", prog.c_str(), ncclGetErrorString(r));
    return 1;
  }
  return errors ? 1 : 0;
}

}  // namespace weft::perf
