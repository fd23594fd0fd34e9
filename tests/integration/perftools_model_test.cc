// The perf tools' descriptions (counts, in-place offsets, calls, expected values) checked
// against a model of NCCL's semantics, without the library: the tools' files are compiled
// with WEFT_PERF_TOOL_REGISTER (no main) and linked with the fake nccl entry points below, which
// run each collective over threads as NCCL defines it (a copy-semantics reference: every
// rank's inputs are read before any output is written). Each tool then runs as in the
// harness -- poison, fill, call, count wrong elements -- for many rank counts, datatypes,
// reductions, roots, sizes and both placements, and a corrupted result must be caught.
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "perf/perf_harness.h"

namespace weft::perf {

std::vector<const CollTest*>& registeredTools() {
  static std::vector<const CollTest*> tools;
  return tools;
}
void registerPerfTool(const CollTest* test) { registeredTools().push_back(test); }

}  // namespace weft::perf

// ---- a fake communicator: n threads, one World ----

namespace {

class Barrier {
 public:
  explicit Barrier(int n) : n_(n) {}
  void wait() {
    std::unique_lock<std::mutex> lock(m_);
    const uint64_t gen = gen_;
    if (++count_ == n_) {
      count_ = 0;
      ++gen_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return gen_ != gen; });
    }
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  int n_, count_ = 0;
  uint64_t gen_ = 0;
};

enum class Kind { kAllGather, kReduceScatter, kBroadcast, kReduce, kAlltoAll, kGather, kScatter, kAllReduce };

struct Call {
  Kind kind;
  const void* send;
  void* recv;
  size_t count;
  ncclDataType_t type;
  ncclRedOp_t op;
  int root;
};

struct P2p {
  bool isSend;
  const void* buf;  // send: source; recv: destination
  size_t count;
  ncclDataType_t type;
  int peer;
};

struct World {
  explicit World(int n) : n(n), barrier(n), calls(n), p2p(n) {}
  int n;
  Barrier barrier;
  std::vector<Call> calls;
  std::vector<std::vector<P2p>> p2p;
  std::mutex errorMutex;
  std::vector<std::string> errors;
  void error(const std::string& e) {
    std::lock_guard<std::mutex> lock(errorMutex);
    errors.push_back(e);
  }
};

}  // namespace

struct ncclComm {
  World* world = nullptr;
  int rank = 0;
  int groupDepth = 0;
  std::vector<P2p> pending;
};

namespace {

using weft::perf::loadElement;
using weft::perf::storeElement;
using weft::perf::typeSize;

const char* at(const void* p, size_t elements, ncclDataType_t t) {
  return static_cast<const char*>(p) + elements * typeSize(t);
}

// Buffers that overlap must be exactly NCCL's in-place form of the collective (nccl.h).
bool overlapIsInPlace(const Call& call, int me, int n) {
  const size_t c = call.count, ts = typeSize(call.type), nc = c * static_cast<size_t>(n);
  size_t sendElems = c, recvElems = c;
  const char* send = static_cast<const char*>(call.send);
  const char* recv = static_cast<const char*>(call.recv);
  const char* inPlaceSend = recv;  // where send must be when the buffers overlap
  switch (call.kind) {
    case Kind::kAllGather:
      recvElems = nc;
      inPlaceSend = recv + me * c * ts;
      break;
    case Kind::kReduceScatter:
      sendElems = nc;
      inPlaceSend = recv - me * c * ts;
      break;
    case Kind::kAlltoAll: sendElems = recvElems = nc; break;
    case Kind::kGather:
      if (me != call.root) return true;  // recvbuff unused
      recvElems = nc;
      inPlaceSend = recv + me * c * ts;
      break;
    case Kind::kScatter:
      if (me != call.root) return true;  // sendbuff unused
      sendElems = nc;
      inPlaceSend = recv - me * c * ts;
      break;
    default: break;  // all-reduce, broadcast, reduce: sendbuff == recvbuff
  }
  const bool overlap = send < recv + recvElems * ts && recv < send + sendElems * ts;
  return !overlap || send == inPlaceSend;
}

// Collective: publish, check every rank made the same call, compute outputs from everyone's
// inputs into a private copy, then write them.
ncclResult_t collective(ncclComm* comm, const Call& call) {
  World& w = *comm->world;
  const int me = comm->rank, n = w.n;
  if (comm->groupDepth) {
    w.error("collective inside a group (not modelled)");
    return ncclInvalidUsage;
  }
  if (!overlapIsInPlace(call, me, n)) {
    w.error("rank " + std::to_string(me) + ": send and receive buffers overlap but are not NCCL's in-place form");
  }
  w.calls[me] = call;
  w.barrier.wait();
  for (int r = 0; r < n; ++r) {
    const Call& o = w.calls[r];
    if (o.kind != call.kind || o.count != call.count || o.type != call.type || o.op != call.op || o.root != call.root) {
      w.error("rank " + std::to_string(me) + ": mismatched collective with rank " + std::to_string(r));
    }
  }
  const size_t c = call.count, ts = typeSize(call.type);
  std::vector<char> out;
  auto copyFrom = [&](const void* src, size_t elements) {
    const char* s = static_cast<const char*>(src);
    out.insert(out.end(), s, s + elements * ts);
  };
  auto reduceAt = [&](size_t firstIndex, size_t elements) {
    std::vector<char> tmp(elements * ts);
    for (size_t i = 0; i < elements; ++i) {
      double acc = 0;
      for (int r = 0; r < n; ++r) {
        double x = loadElement(w.calls[r].send, firstIndex + i, call.type);
        if (r == 0) {
          acc = x;
          continue;
        }
        switch (call.op) {
          case ncclProd: acc *= x; break;
          case ncclMax: acc = std::max(acc, x); break;
          case ncclMin: acc = std::min(acc, x); break;
          default: acc += x; break;
        }
      }
      if (call.op == ncclAvg) acc /= n;
      storeElement(tmp.data(), i, call.type, acc);
    }
    out.insert(out.end(), tmp.begin(), tmp.end());
  };
  bool writes = true;
  switch (call.kind) {
    case Kind::kAllGather:
      for (int r = 0; r < n; ++r) copyFrom(w.calls[r].send, c);
      break;
    case Kind::kReduceScatter: reduceAt(static_cast<size_t>(me) * c, c); break;
    case Kind::kAllReduce: reduceAt(0, c); break;
    case Kind::kBroadcast: copyFrom(w.calls[call.root].send, c); break;
    case Kind::kReduce:
      writes = me == call.root;
      if (writes) reduceAt(0, c);
      break;
    case Kind::kAlltoAll:
      for (int r = 0; r < n; ++r) copyFrom(at(w.calls[r].send, static_cast<size_t>(me) * c, call.type), c);
      break;
    case Kind::kGather:
      writes = me == call.root;
      if (writes)
        for (int r = 0; r < n; ++r) copyFrom(w.calls[r].send, c);
      break;
    case Kind::kScatter: copyFrom(at(w.calls[call.root].send, static_cast<size_t>(me) * c, call.type), c); break;
  }
  w.barrier.wait();  // every input read
  if (writes && !out.empty()) std::memcpy(call.recv, out.data(), out.size());
  w.barrier.wait();  // every output written
  return ncclSuccess;
}

// Point-to-point: at the end of the outermost group, every rank publishes its operations;
// the k-th receive from p takes the k-th send from p to this rank, and sizes must match.
ncclResult_t runP2p(ncclComm* comm) {
  World& w = *comm->world;
  const int me = comm->rank;
  w.p2p[me] = comm->pending;
  comm->pending.clear();
  w.barrier.wait();
  std::vector<std::pair<void*, std::vector<char>>> outs;
  std::map<int, int> recvsFrom;
  for (const P2p& op : w.p2p[me]) {
    if (op.isSend) continue;
    int k = recvsFrom[op.peer]++;
    const P2p* match = nullptr;
    for (const P2p& s : w.p2p[op.peer]) {
      if (s.isSend && s.peer == me && k-- == 0) {
        match = &s;
        break;
      }
    }
    if (!match || match->count != op.count || match->type != op.type) {
      w.error("rank " + std::to_string(me) + ": receive from " + std::to_string(op.peer) + " has no matching send");
      continue;
    }
    const char* s = static_cast<const char*>(match->buf);
    outs.emplace_back(const_cast<void*>(op.buf), std::vector<char>(s, s + op.count * typeSize(op.type)));
  }
  w.barrier.wait();
  for (auto& [dst, bytes] : outs)
    if (!bytes.empty()) std::memcpy(dst, bytes.data(), bytes.size());
  w.barrier.wait();
  return ncclSuccess;
}

}  // namespace

// ---- the fake entry points (C linkage from nccl.h's declarations) ----

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  *count = comm->world->n;
  return ncclSuccess;
}
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  *rank = comm->rank;
  return ncclSuccess;
}
// Groups are per thread in NCCL; one communicator per thread here, so the depth lives on it.
thread_local ncclComm* tlsComm = nullptr;
ncclResult_t ncclGroupStart() {
  ++tlsComm->groupDepth;
  return ncclSuccess;
}
ncclResult_t ncclGroupEnd() {
  if (--tlsComm->groupDepth > 0) return ncclSuccess;
  return runP2p(tlsComm);
}
ncclResult_t ncclSend(const void* buf, size_t count, ncclDataType_t type, int peer, ncclComm_t comm, cudaStream_t) {
  if (peer < 0 || peer >= comm->world->n) return ncclInvalidArgument;
  comm->pending.push_back({true, buf, count, type, peer});
  return comm->groupDepth ? ncclSuccess : runP2p(comm);
}
ncclResult_t ncclRecv(void* buf, size_t count, ncclDataType_t type, int peer, ncclComm_t comm, cudaStream_t) {
  if (peer < 0 || peer >= comm->world->n) return ncclInvalidArgument;
  comm->pending.push_back({false, buf, count, type, peer});
  return comm->groupDepth ? ncclSuccess : runP2p(comm);
}
ncclResult_t ncclAllGather(const void* s, void* r, size_t c, ncclDataType_t t, ncclComm_t comm, cudaStream_t) {
  return collective(comm, {Kind::kAllGather, s, r, c, t, ncclSum, -1});
}
ncclResult_t ncclReduceScatter(const void* s, void* r, size_t c, ncclDataType_t t, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t) {
  return collective(comm, {Kind::kReduceScatter, s, r, c, t, op, -1});
}
ncclResult_t ncclAllReduce(const void* s, void* r, size_t c, ncclDataType_t t, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t) {
  return collective(comm, {Kind::kAllReduce, s, r, c, t, op, -1});
}
ncclResult_t ncclBroadcast(const void* s, void* r, size_t c, ncclDataType_t t, int root, ncclComm_t comm,
                           cudaStream_t) {
  return collective(comm, {Kind::kBroadcast, s, r, c, t, ncclSum, root});
}
ncclResult_t ncclReduce(const void* s, void* r, size_t c, ncclDataType_t t, ncclRedOp_t op, int root, ncclComm_t comm,
                        cudaStream_t) {
  return collective(comm, {Kind::kReduce, s, r, c, t, op, root});
}
ncclResult_t ncclAlltoAll(const void* s, void* r, size_t c, ncclDataType_t t, ncclComm_t comm, cudaStream_t) {
  return collective(comm, {Kind::kAlltoAll, s, r, c, t, ncclSum, -1});
}
ncclResult_t ncclGather(const void* s, void* r, size_t c, ncclDataType_t t, int root, ncclComm_t comm, cudaStream_t) {
  return collective(comm, {Kind::kGather, s, r, c, t, ncclSum, root});
}
ncclResult_t ncclScatter(const void* s, void* r, size_t c, ncclDataType_t t, int root, ncclComm_t comm, cudaStream_t) {
  return collective(comm, {Kind::kScatter, s, r, c, t, ncclSum, root});
}

namespace weft::perf {
namespace {

const CollTest* tool(const std::string& name) {
  for (const CollTest* t : registeredTools())
    if (name == t->name) return t;
  return nullptr;
}

struct CaseResult {
  int64_t wrong = 0;        // wrong elements over all ranks, correct run
  int64_t caught = 0;       // ranks whose single corrupted element was counted
  int64_t corruptible = 0;  // ranks with a checked, non-empty result
  std::vector<std::string> errors;
};

// One harness-like pass of `test` on n thread ranks.
CaseResult runCase(const CollTest& test, int n, ncclDataType_t type, ncclRedOp_t op, int root, size_t count,
                   int inPlace, uint64_t seed) {
  World world(n);
  CaseResult result;
  std::mutex m;
  const size_t ts = typeSize(type);
  const CollCounts c = collCounts(test, count, ts, n);
  // As Runner::allocBuffers: room for every placement.
  const size_t elems = std::max({count, c.sendCount, c.recvCount, c.sendInplaceOffset * n + c.sendCount,
                                 c.recvInplaceOffset * n + c.recvCount}) +
                       8;
  const int dataOp = test.reduces ? static_cast<int>(op) : kNoOp;
  std::vector<std::thread> threads;
  for (int rank = 0; rank < n; ++rank) {
    threads.emplace_back([&, rank] {
      ncclComm comm;
      comm.world = &world;
      comm.rank = rank;
      tlsComm = &comm;
      std::vector<char> sendBuf(elems * ts), recvBuf(elems * ts);
      char* sendPtr = inPlace ? recvBuf.data() + c.sendInplaceOffset * ts * rank : sendBuf.data();
      char* recvPtr = inPlace ? recvBuf.data() + c.recvInplaceOffset * ts * rank : recvBuf.data();
      DataGen data(type, dataOp, n, seed);
      CheckContext ctx{data, rank, n, root, c};
      poisonBuffer(recvBuf.data(), elems, type);
      fillSendBuffer(test, ctx, sendPtr);
      ncclResult_t r = test.run(sendPtr, recvPtr, c.paramCount, type, op, root, &comm, nullptr);
      if (r != ncclSuccess) world.error("rank " + std::to_string(rank) + ": run returned " + std::to_string(r));
      if (inPlace && !test.checksInPlace) return;
      std::string report;
      int64_t wrong = countWrong(test, ctx, recvPtr, &report);
      int64_t caught = 0, corruptible = 0;
      if (c.recvCount && (!test.checksResult || test.checksResult(ctx))) {
        corruptible = 1;
        size_t i = (seed + rank) % c.recvCount;
        if (test.reduces) {
          poisonBuffer(recvPtr + i * ts, 1, type);  // a missing result
        } else {
          // A block taken from the wrong rank (or index): another input, unless it is equal.
          ExpectedValue want = test.expected(ctx, i);
          double other = data.input((rank + 1) % n, (i + 1) % c.recvCount);
          if (data.matches(other, want)) other = data.input((rank + 2) % n, (i + 7) % (c.recvCount + 3));
          storeElement(recvPtr, i, type, other);
          if (data.matches(loadElement(recvPtr, i, type), want)) poisonBuffer(recvPtr + i * ts, 1, type);
        }
        caught = countWrong(test, ctx, recvPtr) == wrong + 1 ? 1 : 0;
      }
      std::lock_guard<std::mutex> lock(m);
      result.wrong += wrong;
      result.caught += caught;
      result.corruptible += corruptible;
      if (!report.empty()) result.errors.push_back(report);
    });
  }
  for (auto& t : threads) t.join();
  result.errors.insert(result.errors.end(), world.errors.begin(), world.errors.end());
  return result;
}

const char* kTools[] = {"all_gather_perf", "reduce_scatter_perf", "broadcast_perf", "reduce_perf",   "alltoall_perf",
                        "sendrecv_perf",   "gather_perf",         "scatter_perf",   "hypercube_perf"};

TEST(PerfTools, EveryToolIsRegistered) {
  for (const char* name : kTools) EXPECT_NE(tool(name), nullptr) << name;
}

TEST(PerfTools, ResultsMatchTheModelOfNccl) {
  const ncclDataType_t types[] = {ncclInt8, ncclFloat16, ncclFloat32, ncclFloat64, ncclUint64, ncclFloat8e5m2};
  const ncclRedOp_t allOps[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
  int cases = 0;
  for (const char* name : kTools) {
    const CollTest* t = tool(name);
    ASSERT_NE(t, nullptr) << name;
    for (int n : {1, 2, 3, 4, 5, 8}) {
      if (t->skipReason && t->skipReason(n)) continue;
      std::vector<int> roots = {0};
      if (t->rooted && n > 1) roots = {0, n - 1, n / 2};
      for (ncclDataType_t type : types) {
        std::vector<ncclRedOp_t> ops = {ncclSum};
        if (t->reduces) ops.assign(std::begin(allOps), std::end(allOps));
        for (ncclRedOp_t op : ops) {
          for (int root : roots) {
            for (size_t count : {size_t{0}, size_t{5}, size_t{97}, size_t{1000}}) {
              for (int inPlace : {0, 1}) {
                uint64_t seed = testSeed(type, op, count, inPlace, n * 31 + root);
                CaseResult r = runCase(*t, n, type, op, root, count, inPlace, seed);
                std::string where = std::string(name) + " n=" + std::to_string(n) + " " + typeName(type) + " " +
                                    opName(op) + " root=" + std::to_string(root) + " count=" + std::to_string(count) +
                                    (inPlace ? " in-place" : " out-of-place");
                ASSERT_TRUE(r.errors.empty()) << where << ": " << r.errors.front();
                ASSERT_EQ(r.wrong, 0) << where;
                ASSERT_EQ(r.caught, r.corruptible) << where << ": a corrupted element was not counted";
                ++cases;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(cases, 1000);
}

// The counts nccl-tests reports: per-rank blocks aligned to 16 bytes, size = max(send, recv).
TEST(PerfTools, CountsAreNcclTests) {
  EXPECT_EQ(alignedPerRankCount(262144, 4, 4), 65536u);
  EXPECT_EQ(alignedPerRankCount(2, 4, 4), 0u);     // 8 B of float over 4 ranks: nothing
  EXPECT_EQ(alignedPerRankCount(100, 1, 3), 32u);  // 33 rounded down to 16 bytes
  EXPECT_EQ(alignedPerRankCount(100, 8, 3), 32u);  // 33 doubles -> 32 (2 per 16 bytes)
  const CollTest* ag = tool("all_gather_perf");
  ASSERT_NE(ag, nullptr);
  CollCounts c = collCounts(*ag, 1048576 / 4, 4, 4);
  EXPECT_EQ(c.paramCount, 65536u);
  EXPECT_EQ(reportedBytes(c, 4), 1048576u);
  const CollTest* rs = tool("reduce_scatter_perf");
  c = collCounts(*rs, 1048576 / 4, 4, 4);
  EXPECT_EQ(c.paramCount, 65536u);
  EXPECT_EQ(c.sendCount, 262144u);
  EXPECT_EQ(reportedBytes(c, 4), 1048576u);
  const CollTest* a2a = tool("alltoall_perf");
  c = collCounts(*a2a, 1000, 4, 3);
  EXPECT_EQ(c.paramCount, 332u);
  EXPECT_EQ(c.sendCount, 996u);
  EXPECT_FALSE(a2a->checksInPlace);
  const CollTest* bc = tool("broadcast_perf");
  c = collCounts(*bc, 1000, 4, 3);
  EXPECT_EQ(c.paramCount, 1000u);
}

// nccl-tests' bandwidth factors (doc/PERFORMANCE.md; hypercube from hypercube.cu).
TEST(PerfTools, BandwidthFactorsAreNcclTests) {
  const int n = 8;
  auto factors = [&](const char* name) {
    const CollTest* t = tool(name);
    return std::make_pair(t->algFactor(n), t->busFactor(n));
  };
  for (const char* name : {"all_gather_perf", "reduce_scatter_perf", "alltoall_perf", "gather_perf", "scatter_perf"}) {
    EXPECT_DOUBLE_EQ(factors(name).first, 8.0) << name;
    EXPECT_DOUBLE_EQ(factors(name).second, 7.0 / 8.0) << name;
  }
  for (const char* name : {"broadcast_perf", "reduce_perf", "sendrecv_perf"}) {
    EXPECT_DOUBLE_EQ(factors(name).first, 1.0) << name;
    EXPECT_DOUBLE_EQ(factors(name).second, 1.0) << name;
  }
  EXPECT_DOUBLE_EQ(factors("hypercube_perf").first, 7.0);
  EXPECT_DOUBLE_EQ(factors("hypercube_perf").second, 1.0);
  EXPECT_TRUE(tool("broadcast_perf")->rooted && tool("reduce_perf")->rooted && tool("gather_perf")->rooted &&
              tool("scatter_perf")->rooted);
  EXPECT_TRUE(tool("reduce_perf")->reduces && tool("reduce_scatter_perf")->reduces);
  EXPECT_FALSE(tool("all_gather_perf")->reduces || tool("all_gather_perf")->rooted);
}

TEST(PerfTools, HypercubeSkipsRankCountsThatAreNotPowersOfTwo) {
  const CollTest* t = tool("hypercube_perf");
  ASSERT_NE(t, nullptr);
  for (int n : {1, 2, 4, 8, 64}) EXPECT_EQ(t->skipReason(n), nullptr) << n;
  for (int n : {3, 5, 6, 12}) {
    ASSERT_NE(t->skipReason(n), nullptr) << n;
    EXPECT_EQ(std::string(t->skipReason(n)), "nRanks " + std::to_string(n) + " is not a power of 2, skipping");
  }
}

TEST(PerfTools, RootMinusOneIsAccepted) {
  const char* argv[] = {"broadcast_perf", "-r", "-1"};
  PerfParse p = parsePerfArgs(3, argv);
  ASSERT_EQ(p.kind, PerfParse::kRun) << p.error;
  EXPECT_EQ(p.options.root, -1);
  const char* bad[] = {"broadcast_perf", "-r", "-2"};
  EXPECT_EQ(parsePerfArgs(3, bad).kind, PerfParse::kError);
}

}  // namespace
}  // namespace weft::perf
