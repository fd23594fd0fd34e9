// The shared harness of weft's nccl-tests-compatible perf tools.
//
// A tool is one small file that describes its collective as a CollTest -- buffer counts, the
// call, what each rank sends, what each rank must receive, and the bandwidth factors -- and
// whose main() is `return weft::perf::runPerfTool(argc, argv, kTest);`. The harness does the
// rest: nccl-tests' flags, communicator from weftCommInitFromEnv, buffers allocated once at
// the largest size, warm-up, timing, data check, and nccl-tests' output format.
#ifndef WEFT_PERF_PERF_HARNESS_H_
#define WEFT_PERF_PERF_HARNESS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "nccl.h"
#include "perf/perf_data.h"
#include "perf/perf_json.h"
#include "perf/perf_options.h"
#include "perf/perf_report.h"

namespace weft::perf {

// Element counts of one test, as nccl-tests' getCollByteCount computes them from
// count = bytes / typeSize.
struct CollCounts {
  size_t sendCount;          // elements in each rank's send buffer
  size_t recvCount;          // elements in each rank's receive buffer
  size_t paramCount;         // the count argument of the call (and the "count" column)
  size_t sendInplaceOffset;  // in-place: rank r's send data is at recvbuf + r * this
  size_t recvInplaceOffset;  // in-place: rank r's result is at recvbuf + r * this
};

// What fill/expected functions know about the test being checked.
struct CheckContext {
  const DataGen& data;  // data.input(rank, i): what `rank` holds at send index i
  int rank;
  int nranks;
  int root;
  CollCounts counts;
};

struct CollTest {
  const char* name;  // tool name, e.g. "all_reduce_perf"
  bool reduces;      // redop column shows the op (else "none"; data for copies)
  bool rooted;       // root column shows -r (else -1)
  CollCounts (*counts)(size_t count, int nranks);
  ncclResult_t (*run)(const void* sendbuf, void* recvbuf, size_t paramCount, ncclDataType_t type, ncclRedOp_t op,
                      int root, ncclComm_t comm, cudaStream_t stream);
  // Expected value of element i (< recvCount) of this rank's result.
  ExpectedValue (*expected)(const CheckContext& ctx, size_t recvIndex);
  double (*algFactor)(int nranks);  // algbw = paramCount * typeSize * algFactor / time
  double (*busFactor)(int nranks);  // busbw = algbw * busFactor
  // Optional: writes this rank's sendCount inputs (default: data.input(rank, 0..sendCount-1)).
  void (*fillSend)(const CheckContext& ctx, void* sendbuf) = nullptr;
  // Optional: whether this rank's result is checked (default: every rank; reduce: root only).
  bool (*checksResult)(const CheckContext& ctx) = nullptr;
  // Optional, replaces `counts` when set: counts that depend on the datatype's size too
  // (nccl-tests aligns per-rank blocks to 16 bytes: see alignedPerRankCount).
  CollCounts (*countsForType)(size_t count, size_t typeSize, int nranks) = nullptr;
  // false: the in-place result is not checked (#wrong shows N/A), as nccl-tests does for
  // alltoall, whose in-place form NCCL does not define.
  bool checksInPlace = true;
  // Optional: a reason not to run with this many ranks (e.g. hypercube needs a power of
  // two); the tool then prints it, runs nothing and succeeds, as nccl-tests does.
  const char* (*skipReason)(int nranks) = nullptr;
};

// nccl-tests' bandwidth factors.
double factorOne(int nranks);            // algbw of one count; busbw of broadcast, reduce, sendrecv
double factorRanks(int nranks);          // algbw of all_gather, reduce_scatter, alltoall, gather, scatter
double busFactorAllReduce(int nranks);   // 2(n-1)/n
double busFactorAllGather(int nranks);   // (n-1)/n: also reduce_scatter, alltoall, gather, scatter
double factorRanksMinusOne(int nranks);  // n-1: algbw of hypercube (nccl-tests: bytes received per rank)

// nccl-tests' per-rank block of `count` elements over n ranks: (count / n) rounded down to a
// multiple of 16 bytes (all_gather, reduce_scatter, alltoall, gather, scatter, hypercube).
size_t alignedPerRankCount(size_t count, size_t typeSize, int nranks);
// The test's counts for `count` elements of typeSize bytes (countsForType, else counts).
CollCounts collCounts(const CollTest& test, size_t count, size_t typeSize, int nranks);

// Pure pieces of the run, exposed for tests.
void fillSendBuffer(const CollTest& test, const CheckContext& ctx, void* sendbuf);
// Mismatching elements of this rank's result; the first few are described in *report.
int64_t countWrong(const CollTest& test, const CheckContext& ctx, const void* recvbuf, std::string* report = nullptr);
// Bytes for the "size" column: max(send, recv) bytes, as nccl-tests reports.
size_t reportedBytes(const CollCounts& counts, size_t typeSize);
// Deterministic seed for one (type, op, size, placement, repetition) test.
uint64_t testSeed(ncclDataType_t type, int op, size_t bytes, int inPlace, int rep);

// Runs the tool; returns the process exit code (0: ran and every check passed).
int runPerfTool(int argc, char** argv, const CollTest& test);

class Runner;

// The tools' measurement of one size, for programs that choose their own sizes and
// communicators (weft-characterize): the same warm-up, timed loop, data check (options.check)
// and -I statistics (options.perIterTiming, every rank's times in perProcessUs), printing
// nothing. Every rank of `comm` makes the same calls. Failures throw std::runtime_error.
class CollectiveBench {
 public:
  // Allocates and pre-faults buffers for options.maxBytes, once.
  CollectiveBench(const CollTest& test, const PerfOptions& options, ncclComm_t comm);
  ~CollectiveBench();
  CollectiveBench(const CollectiveBench&) = delete;
  CollectiveBench& operator=(const CollectiveBench&) = delete;

  // options.warmupIters warm-up calls at `bytes`, then the out-of-place row (inPlace unset).
  PerfJsonResult measure(ncclDataType_t type, ncclRedOp_t op, size_t bytes);

 private:
  std::unique_ptr<Runner> runner_;
};

// Programs that link several tools' descriptions (weft-characterize, tests/integration/
// perftools_model_test.cc) compile them with WEFT_PERF_TOOL_REGISTER and define this function.
void registerPerfTool(const CollTest* test);

}  // namespace weft::perf

// The last line of a tool file: its main(), or, where several tools' descriptions are linked
// into one program, the registration of its description.
#ifdef WEFT_PERF_TOOL_REGISTER
#define WEFT_PERF_TOOL_MAIN(test) \
  [[maybe_unused]] static const bool weftPerfToolRegistered = (weft::perf::registerPerfTool(&(test)), true);
#else
#define WEFT_PERF_TOOL_MAIN(test) \
  int main(int argc, char** argv) { return weft::perf::runPerfTool(argc, argv, test); }
#endif

#endif  // WEFT_PERF_PERF_HARNESS_H_
