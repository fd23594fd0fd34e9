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
#include <string>

#include "nccl.h"
#include "perf/perf_data.h"
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
  ncclResult_t (*run)(const void* sendbuf, void* recvbuf, size_t paramCount, ncclDataType_t type,
                      ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);
  // Expected value of element i (< recvCount) of this rank's result.
  ExpectedValue (*expected)(const CheckContext& ctx, size_t recvIndex);
  double (*algFactor)(int nranks);  // algbw = paramCount * typeSize * algFactor / time
  double (*busFactor)(int nranks);  // busbw = algbw * busFactor
  // Optional: writes this rank's sendCount inputs (default: data.input(rank, 0..sendCount-1)).
  void (*fillSend)(const CheckContext& ctx, void* sendbuf) = nullptr;
  // Optional: whether this rank's result is checked (default: every rank; reduce: root only).
  bool (*checksResult)(const CheckContext& ctx) = nullptr;
};

// nccl-tests' bandwidth factors.
double factorOne(int nranks);                // algbw of one count; busbw of broadcast, reduce, sendrecv
double factorRanks(int nranks);              // algbw of all_gather, reduce_scatter, alltoall, gather, scatter
double busFactorAllReduce(int nranks);       // 2(n-1)/n
double busFactorAllGather(int nranks);       // (n-1)/n: also reduce_scatter, alltoall, gather, scatter

// Pure pieces of the run, exposed for tests.
void fillSendBuffer(const CollTest& test, const CheckContext& ctx, void* sendbuf);
// Mismatching elements of this rank's result; the first few are described in *report.
int64_t countWrong(const CollTest& test, const CheckContext& ctx, const void* recvbuf,
                   std::string* report = nullptr);
// Bytes for the "size" column: max(send, recv) bytes, as nccl-tests reports.
size_t reportedBytes(const CollCounts& counts, size_t typeSize);
// Deterministic seed for one (type, op, size, placement, repetition) test.
uint64_t testSeed(ncclDataType_t type, int op, size_t bytes, int inPlace, int rep);

// Runs the tool; returns the process exit code (0: ran and every check passed).
int runPerfTool(int argc, char** argv, const CollTest& test);

}  // namespace weft::perf

#endif  // WEFT_PERF_PERF_HARNESS_H_
