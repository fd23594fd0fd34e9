#include <cstdio>
#include <cstring>

#include "common/dtype.h"
#include "tests/support/reference.h"
#include "tests/support/test_device.h"

namespace weft::testing {

void CpuTestDevice::write(cudaStream_t stream, void* device, std::vector<char> bytes) {
  device_.enqueue(stream, [device, bytes = std::move(bytes)] { memcpy(device, bytes.data(), bytes.size()); });
}

void CpuTestDevice::read(cudaStream_t stream, void* host, const void* device, size_t bytes) {
  device_.enqueue(stream, [=] { memcpy(host, device, bytes); });
}

void CpuTestDevice::copy(cudaStream_t stream, void* dst, const void* src, size_t bytes) {
  device_.enqueue(stream, [=] { memcpy(dst, src, bytes); });
}

StreamChecks::~StreamChecks() {
  for (void* p : allocations_) device_.release(p);
}

char* StreamChecks::deviceBuffer(size_t bytes) {
  char* p = static_cast<char*>(device_.allocate(bytes + 8));
  allocations_.push_back(p);
  return p;
}

char* StreamChecks::input(cudaStream_t stream, size_t count, ncclDataType_t type, ncclRedOp_t op, unsigned seed,
                          int owner) {
  const size_t bytes = count * dataTypeSize(type);
  char* p = deviceBuffer(bytes);
  std::vector<char> host(bytes + 8);
  fillInput(host.data(), count, owner < 0 ? rank_ : owner, type, op, seed);
  host.resize(bytes);
  device_.write(stream, p, std::move(host));
  return p;
}

void StreamChecks::expect(cudaStream_t stream, const char* result, size_t count, ncclDataType_t type,
                          std::function<double(size_t)> expected, int reducedRanks, ncclRedOp_t op, std::string label) {
  auto snapshot = std::make_unique<std::vector<char>>(count * dataTypeSize(type) + 8);
  device_.read(stream, snapshot->data(), result, count * dataTypeSize(type));
  pending_.push_back({std::move(snapshot), count, type, std::move(expected), reducedRanks, op,
                      "rank " + std::to_string(rank_) + " " + label});
}

size_t StreamChecks::mismatches() const {
  size_t wrong = 0;
  for (const Pending& p : pending_)
    wrong +=
        countMismatchesAgainst(p.snapshot->data(), p.count, p.type, p.expected, p.reducedRanks, p.op, p.label.c_str());
  return wrong;
}

namespace {

bool ok(ncclResult_t result, ncclComm_t comm, const char* what) {
  if (result == ncclSuccess) return true;
  fprintf(stderr, "%s failed: %s\n", what, ncclGetLastError(comm));
  return false;
}

// Enqueues the grid; false when a call failed.
bool enqueueGrid(TestDevice& device, StreamChecks& checks, ncclComm_t comm, int rank, int n,
                 const cudaStream_t streams[2]) {
  unsigned seed = 500;
  int scenario = 0;
  for (ncclDataType_t type : kAllTypes)
    for (size_t count : {size_t{1}, size_t{7}, size_t{4099}})
      for (bool inPlace : {false, true}) {
        const size_t es = dataTypeSize(type);
        const int root = ++scenario % n;
        cudaStream_t s = streams[scenario % 2];
        const std::string where = std::string(dataTypeName(type)) + " x" + std::to_string(count) +
                                  (inPlace ? " in place" : "") + " #" + std::to_string(scenario);
        ++seed;
        for (ncclRedOp_t op : kAllOps) {
          char* send = checks.input(s, count, type, op, seed);
          char* recv = inPlace ? send : checks.deviceBuffer(count * es);
          if (!ok(ncclAllReduce(send, recv, count, type, op, comm, s), comm, "ncclAllReduce")) return false;
          checks.expect(
              s, recv, count, type, [=](size_t i) { return expectedReduction(n, i, type, op, seed); }, n, op,
              "allreduce " + where);
        }
        {
          char* send = checks.input(s, count, type, ncclSum, seed);
          char* recv = inPlace ? send : checks.deviceBuffer(count * es);
          if (!ok(ncclBroadcast(send, recv, count, type, root, comm, s), comm, "ncclBroadcast")) return false;
          checks.expect(
              s, recv, count, type, [=](size_t i) { return inputValue(root, i, type, ncclSum, seed); }, 1, ncclSum,
              "broadcast " + where);
        }
        {
          char* send = checks.input(s, count, type, ncclSum, seed);
          char* recv = inPlace ? send : checks.deviceBuffer(count * es);
          if (!ok(ncclReduce(send, recv, count, type, ncclSum, root, comm, s), comm, "ncclReduce")) return false;
          if (rank == root)
            checks.expect(
                s, recv, count, type, [=](size_t i) { return expectedReduction(n, i, type, ncclSum, seed); }, n,
                ncclSum, "reduce " + where);
        }
        {
          char* recv = checks.deviceBuffer(n * count * es);
          char* send = checks.input(s, count, type, ncclSum, seed);
          if (inPlace) {
            device.copy(s, recv + rank * count * es, send, count * es);
            send = recv + rank * count * es;
          }
          if (!ok(ncclAllGather(send, recv, count, type, comm, s), comm, "ncclAllGather")) return false;
          for (int r = 0; r < n; ++r)
            checks.expect(
                s, recv + r * count * es, count, type, [=](size_t i) { return inputValue(r, i, type, ncclSum, seed); },
                1, ncclSum, "allgather " + where);
        }
        {
          char* send = checks.input(s, n * count, type, ncclSum, seed);
          char* recv = inPlace ? send + rank * count * es : checks.deviceBuffer(count * es);
          if (!ok(ncclReduceScatter(send, recv, count, type, ncclSum, comm, s), comm, "ncclReduceScatter"))
            return false;
          checks.expect(
              s, recv, count, type,
              [=](size_t i) { return expectedReduction(n, rank * count + i, type, ncclSum, seed); }, n, ncclSum,
              "reducescatter " + where);
        }
        {
          char* send = checks.input(s, n * count, type, ncclSum, seed);
          char* recv = inPlace ? send : checks.deviceBuffer(n * count * es);
          if (!ok(ncclAlltoAll(send, recv, count, type, comm, s), comm, "ncclAlltoAll")) return false;
          for (int j = 0; j < n; ++j)
            checks.expect(
                s, recv + j * count * es, count, type,
                [=](size_t i) { return inputValue(j, rank * count + i, type, ncclSum, seed); }, 1, ncclSum,
                "alltoall " + where);
        }
        {
          char* recv = checks.deviceBuffer(n * count * es);
          char* send = checks.input(s, count, type, ncclSum, seed);
          if (inPlace && rank == root) {
            device.copy(s, recv + root * count * es, send, count * es);
            send = recv + root * count * es;
          }
          if (!ok(ncclGather(send, recv, count, type, root, comm, s), comm, "ncclGather")) return false;
          if (rank == root)
            for (int r = 0; r < n; ++r)
              checks.expect(
                  s, recv + r * count * es, count, type,
                  [=](size_t i) { return inputValue(r, i, type, ncclSum, seed); }, 1, ncclSum, "gather " + where);
        }
        {
          char* send = checks.input(s, n * count, type, ncclSum, seed);
          char* recv = inPlace && rank == root ? send + root * count * es : checks.deviceBuffer(count * es);
          if (!ok(ncclScatter(send, recv, count, type, root, comm, s), comm, "ncclScatter")) return false;
          checks.expect(
              s, recv, count, type, [=](size_t i) { return inputValue(root, rank * count + i, type, ncclSum, seed); },
              1, ncclSum, "scatter " + where);
        }
        {
          // A ring of sends and receives in one group, the receive on the other stream.
          const int next = (rank + 1) % n, previous = (rank + n - 1) % n;
          cudaStream_t other = streams[(scenario + 1) % 2];
          char* send = checks.input(s, count, type, ncclSum, seed);
          char* recv = checks.deviceBuffer(count * es);
          ncclGroupStart();
          ncclSend(send, count, type, next, comm, s);
          ncclRecv(recv, count, type, previous, comm, other);
          if (!ok(ncclGroupEnd(), comm, "send/recv group")) return false;
          checks.expect(
              other, recv, count, type, [=](size_t i) { return inputValue(previous, i, type, ncclSum, seed); }, 1,
              ncclSum, "send/recv " + where);
        }
      }
  return true;
}

}  // namespace

size_t runStreamOrderedGrid(TestDevice& device, int rank, int n, const ncclUniqueId& id) {
  ncclComm_t comm;
  if (ncclCommInitRank(&comm, n, id, rank) != ncclSuccess) return 1001;
  const cudaStream_t streams[2] = {device.createStream(), device.createStream()};
  size_t wrong = 0;
  {
    StreamChecks checks(device, rank);
    if (!enqueueGrid(device, checks, comm, rank, n, streams)) wrong += 1002;
    for (cudaStream_t s : streams) device.synchronize(s);
    wrong += checks.mismatches();
  }
  ncclResult_t asyncError = ncclSuccess;
  ncclCommGetAsyncError(comm, &asyncError);
  if (asyncError != ncclSuccess) {
    fprintf(stderr, "rank %d: asynchronous error %d: %s\n", rank, asyncError, ncclGetLastError(comm));
    wrong += 1100;
  }
  if (ncclCommDestroy(comm) != ncclSuccess) wrong += 1200;
  for (cudaStream_t s : streams) device.destroyStream(s);
  return wrong;
}

}  // namespace weft::testing
