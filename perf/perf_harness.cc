// The runner: communicator, buffers, warm-up, timing, checking and nccl-tests' output.
#include "perf/perf_harness.h"

#include <sys/mman.h>
#include <unistd.h>

#include <libgen.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <string>
#include <vector>

#include "perf/perf_json.h"
#include "weft/weft.h"

namespace weft::perf {
namespace {

constexpr size_t kPage = 4096;
constexpr size_t kRankLine = 256;  // bytes per rank in the gathered "#  Rank" lines

double nowSec() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double processCpuSec() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

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

}  // namespace

// Outside the anonymous namespace with Runner, which CollectiveBench (perf_harness.h) holds.
struct PerfError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// -J FILE: the document rank 0 fills during the run and writes at its end (also after an
// error, with the error in it).
struct JsonOutput {
  int fd = -1;
  std::string path;
  PerfJsonRun doc;
};

// One tool's run (run()), or the measurements a CollectiveBench asks for (attach(), then
// measureSize()).
class Runner {
 public:
  Runner(const CollTest& test, const PerfOptions& options, ncclComm_t comm, JsonOutput* json, bool quiet = false)
      : test_(test), o_(options), comm_(comm), quiet_(quiet), json_(json) {}
  ~Runner() { freeBuffers(); }

  // Returns the number of failed checks.
  int run();
  // Reads the communicator's size and rank and sizes the -I tables (run() does it itself).
  void attach();
  void allocBuffers();
  void warmup(ncclDataType_t type, ncclRedOp_t op, size_t bytes);
  // One row: out of place, and in place when inPlaceToo.
  PerfJsonResult measureSize(ncclDataType_t type, ncclRedOp_t op, size_t size, bool inPlaceToo);

 private:
  void check(ncclResult_t r, const char* what) {
    if (r == ncclSuccess) return;
    std::string last = ncclGetLastError(comm_) ? ncclGetLastError(comm_) : "";
    throw PerfError(std::string(what) + " failed: " + ncclGetErrorString(r) +
                    (last.empty() ? "" : " ('" + last + "')"));
  }
  void print(const std::string& s) {
    if (rank_ == 0 && !quiet_) std::fputs(s.c_str(), stdout);
  }
  double allReduceDouble(double v, ncclRedOp_t op);
  int64_t allReduceSum(int64_t v);
  void barrier();
  void printHeader();
  void freeBuffers();
  void* alloc(size_t bytes);
  void runOnce(const void* send, void* recv, const CollCounts& c, ncclDataType_t type, ncclRedOp_t op);
  void timeTest(ncclDataType_t type, ncclRedOp_t op);
  PerfJsonPlacement benchTime(ncclDataType_t type, ncclRedOp_t op, size_t bytes, const CollCounts& c, int inPlace);
  void openJsonOutput();
  void iterationStatistics(PerfJsonPlacement* out);

  const CollTest& test_;
  PerfOptions o_;
  ncclComm_t comm_;
  bool quiet_;  // prints nothing (a CollectiveBench's caller reports)
  int rank_ = 0, nranks_ = 1;
  char* send_ = nullptr;
  char* recv_ = nullptr;
  size_t sendBytes_ = 0, recvBytes_ = 0;
  double busBwSum_ = 0;
  int busBwCount_ = 0;
  int errors_ = 0;
  int rep_ = 0;
  int root_ = 0;                     // the root of the current pass (-r, or each rank in turn with -r -1)
  JsonOutput* json_;                 // -J: rank 0 fills json_->doc; null without -J
  std::vector<double> iterSeconds_;  // -I: this rank's time of each timed iteration
  std::vector<double> iterRows_;     // -I: every rank's iterSeconds_, gathered (nranks x iters)
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
                                    o_.memAlloc ? "host memory (weftMemAllocHost)" : "host memory");
  line.resize(std::min(line.size(), kRankLine - 1));
  std::memcpy(mine.data() + kRankLine * rank_, line.data(), line.size());
  check(ncclAllReduce(mine.data(), all.data(), mine.size(), ncclUint8, ncclSum, comm_, nullptr),
        "ncclAllReduce(rank lines)");
  for (int r = 0; r < nranks_; ++r) {
    std::string rankLine(reinterpret_cast<const char*>(all.data() + kRankLine * r));
    print(rankLine);
    PerfJsonDevice device;
    if (rank_ == 0 && json_ && parseRankLine(rankLine, &device)) json_->doc.devices.push_back(device);
  }
  print("#\n");
  print(formatColumnHeader(o_.reportCputime != 0, o_.perIterTiming != 0));
  if (rank_ == 0) std::fflush(stdout);
}

void* Runner::alloc(size_t bytes) {
  void* p = nullptr;
  if (o_.memAlloc) {
    check(weftMemAllocHost(&p, bytes), "weftMemAllocHost");  // ncclMemAlloc's host memory, GPU or not
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

void Runner::openJsonOutput() {
  if (o_.outputFile.empty()) return;
  std::string error;
  if (rank_ == 0) {
    json_->fd = createPerfJsonFile(o_.outputFile, &json_->path, &error);
    if (json_->fd >= 0) print("# Writing JSON output to " + json_->path + "\n");
  }
  // Every rank stops alike when rank 0 cannot write the file.
  if (allReduceSum(rank_ == 0 && json_->fd < 0 ? 1 : 0) != 0)
    throw PerfError("-J: " + (rank_ == 0 ? error : "rank 0 cannot create " + o_.outputFile));
}

// -I: per iteration, the slowest rank's time, its statistics (printed) and every rank's row.
void Runner::iterationStatistics(PerfJsonPlacement* out) {
  const int iters = o_.iters;
  std::vector<double> mine(iterRows_.size(), 0.0);
  std::copy(iterSeconds_.begin(), iterSeconds_.end(), mine.begin() + static_cast<ptrdiff_t>(rank_) * iters);
  check(ncclAllReduce(mine.data(), iterRows_.data(), iterRows_.size(), ncclFloat64, ncclSum, comm_, nullptr),
        "ncclAllReduce(iteration times)");
  for (double& t : iterRows_) t *= 1e6;
  out->hasIterations = true;
  out->skippedIterations = o_.perIterSkip;
  out->timesUs = slowestRankPerIteration(iterRows_, nranks_, iters);
  out->statsUs = computeIterStats(out->timesUs, o_.perIterSkip);
  if (nranks_ > 1) {
    for (int r = 0; r < nranks_; ++r)
      out->perProcessUs.emplace_back(iterRows_.begin() + static_cast<ptrdiff_t>(r) * iters,
                                     iterRows_.begin() + static_cast<ptrdiff_t>(r + 1) * iters);
  }
}

PerfJsonPlacement Runner::benchTime(ncclDataType_t type, ncclRedOp_t op, size_t bytes, const CollCounts& c,
                                    int inPlace) {
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
  if (o_.data == InputData::Normal)
    fillNormal(const_cast<char*>(sendPtr), c.sendCount, type, testSeed(type, dataOp, bytes, inPlace, rank_));
  runOnce(sendPtr, recvPtr, c, type, op);  // sync, as nccl-tests
  barrier();

  const double t0 = nowSec();
  const double cpu0 = o_.reportCputime ? processCpuSec() : 0.0;
  for (int iter = 0; iter < o_.iters; ++iter) {
    const double iterStart = o_.perIterTiming ? nowSec() : 0.0;
    if (o_.aggIters > 1) check(ncclGroupStart(), "ncclGroupStart");
    for (int a = 0; a < o_.aggIters; ++a) runOnce(sendPtr, recvPtr, c, type, op);
    if (o_.aggIters > 1) check(ncclGroupEnd(), "ncclGroupEnd");
    if (o_.blocking) barrier();
    if (o_.perIterTiming) iterSeconds_[iter] = (nowSec() - iterStart) / o_.aggIters;  // per collective, as nccl-tests
  }
  // -C 1: the process's CPU time per call in place of the wall time, as nccl-tests reports it
  // (what spinning costs a trainer's compute threads).
  double sec =
      ((o_.reportCputime ? processCpuSec() - cpu0 : nowSec() - t0)) / (static_cast<double>(o_.iters) * o_.aggIters);
  switch (o_.average) {
    case 0: sec = allReduceDouble(rank_ == 0 ? sec : 0.0, ncclSum); break;
    case 2: sec = allReduceDouble(sec, ncclMin); break;
    case 3: sec = allReduceDouble(sec, ncclMax); break;
    default: sec = allReduceDouble(sec, ncclSum) / nranks_; break;
  }
  Bandwidth bw = computeBandwidth(c.paramCount, ts, sec, test_.algFactor(nranks_), test_.busFactor(nranks_));
  PerfJsonPlacement result;
  if (o_.perIterTiming) iterationStatistics(&result);

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
  if (o_.perIterTiming) print(formatIterColumns(result.statsUs));
  busBwSum_ += bw.busBw;
  ++busBwCount_;
  result.timeUs = sec * 1e6;
  result.algBw = bw.algBw;
  result.busBw = bw.busBw;
  result.wrong = wrong;
  return result;
}

PerfJsonResult Runner::measureSize(ncclDataType_t type, ncclRedOp_t op, size_t size, bool inPlaceToo) {
  const size_t ts = typeSize(type);
  CollCounts c = collCounts(test_, size / ts, ts, nranks_);
  PerfJsonResult row;
  row.size = reportedBytes(c, ts);
  row.count = c.paramCount;
  row.type = typeName(type);
  row.redop = test_.reduces ? opName(op) : "none";
  row.root = test_.rooted ? root_ : -1;
  row.actualIterations = o_.iters;
  print(formatRowStart(row.size, row.count, row.type.c_str(), row.redop.c_str(), row.root));
  row.outOfPlace = benchTime(type, op, size, c, 0);
  if (inPlaceToo) row.inPlace = benchTime(type, op, size, c, 1);
  print("\n");
  return row;
}

void Runner::timeTest(ncclDataType_t type, ncclRedOp_t op) {
  barrier();
  warmup(type, op, o_.maxBytes);
  warmup(type, op, o_.minBytes);
  for (size_t size : sizeSteps(o_)) {
    PerfJsonResult row = measureSize(type, op, size, true);
    if (rank_ == 0 && json_) json_->doc.results.push_back(std::move(row));
  }
}

void Runner::attach() {
  check(ncclCommCount(comm_, &nranks_), "ncclCommCount");
  check(ncclCommUserRank(comm_, &rank_), "ncclCommUserRank");
  if (o_.perIterTiming) {
    iterSeconds_.assign(static_cast<size_t>(o_.iters), 0.0);
    iterRows_.assign(static_cast<size_t>(o_.iters) * nranks_, 0.0);
  }
}

int Runner::run() {
  attach();
  if (test_.rooted && o_.root >= nranks_)
    throw PerfError("root " + std::to_string(o_.root) + " is not a rank (" + std::to_string(nranks_) + " ranks)");
  openJsonOutput();
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
  const double averageBusBw = busBwCount_ ? busBwSum_ / busBwCount_ : 0.0;
  print(formatSummary(errors_, averageBusBw));
  print("\n");
  if (rank_ == 0 && json_) {
    json_->doc.outOfBounds = errors_;
    json_->doc.averageBusBw = averageBusBw;
  }
  return errors_;
}

namespace {

// Finishes and writes the -J document (nothing without -J, or on ranks other than 0). False
// with a message on stderr when the file cannot be written.
bool writeJsonOutput(JsonOutput* json, const std::string& prog, const std::string& error) {
  if (json->fd < 0) return true;
  json->doc.endTime = perfJsonTimeNow();
  json->doc.errors = {error};  // nccl-tests: ncclGetLastError(NULL), "" after a clean run
  const std::string text = formatPerfJson(json->doc);
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(json->fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  const bool ok = done == text.size() && ::close(json->fd) == 0;
  json->fd = -1;
  if (!ok) std::fprintf(stderr, "%s: cannot write %s: %s\n", prog.c_str(), json->path.c_str(), std::strerror(errno));
  return ok;
}

}  // namespace

CollectiveBench::CollectiveBench(const CollTest& test, const PerfOptions& options, ncclComm_t comm)
    : runner_(std::make_unique<Runner>(test, options, comm, nullptr, true)) {
  runner_->attach();
  runner_->allocBuffers();
}

CollectiveBench::~CollectiveBench() = default;

PerfJsonResult CollectiveBench::measure(ncclDataType_t type, ncclRedOp_t op, size_t bytes) {
  runner_->warmup(type, op, bytes);
  return runner_->measureSize(type, op, bytes, false);
}

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

  JsonOutput json;
  json.doc.startTime = perfJsonTimeNow();
  json.doc.args.assign(argv, argv + argc);
  for (char** e = environ; e && *e; ++e) json.doc.env.push_back(redactedEnvironmentEntry(*e));
  ncclGetVersion(&json.doc.ncclVersion);
  json.doc.options = parsed.options;

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
    Runner runner(test, parsed.options, comm, &json);
    errors = runner.run();
  } catch (const PerfError& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: %s\n", prog.c_str(), e.what());
    writeJsonOutput(&json, prog, e.what());
    ncclCommAbort(comm);
    return 1;
  }
  if (!writeJsonOutput(&json, prog, "")) errors = std::max(errors, 1);
  r = ncclCommDestroy(comm);
  if (r != ncclSuccess) {
    std::fprintf(stderr, "%s: ncclCommDestroy failed: %s\n", prog.c_str(), ncclGetErrorString(r));
    return 1;
  }
  return errors ? 1 : 0;
}

}  // namespace weft::perf
