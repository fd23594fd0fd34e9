// What PyTorch's ProcessGroupNCCL does to a NCCL library, as one rank of a weftrun job,
// compiled against NVIDIA's own nccl.h (not weft's) and linked against weft's libnccl.so.2.
//
//   abi_process_group [--nonblocking] [--fault]
//
// The calls follow ProcessGroupNCCL's pattern: ncclGetVersion; init (with config.blocking = 0
// polled through ncclCommGetAsyncError when --nonblocking); a watchdog thread calling
// ncclCommGetAsyncError on every communicator every 10 ms throughout; new_group by split (members
// one color, the others NOCOLOR); DDP's all-gather of shapes and broadcast of parameters;
// bucketed in-place PREMUL_SUM all-reduces (host-immediate and device-residence scalars) with the
// operator destroyed right after each call; FSDP's bf16 all-gather and reduce-scatter with
// ncclAvg; coalesced reduce-scatters with PREMUL_SUM in a group; all_to_all_single with uneven
// splits (zero counts, self included) as a group of send/recv; batch_isend_irecv as nested
// groups; a barrier (a 1-float all-reduce). Then a clean shutdown (finalize, poll, destroy), or
// with --fault: the last rank skips an all-reduce, and the others' watchdog aborts both
// communicators in a group; their blocked all-reduce must return an error within a second.
// Every result is checked exactly (inputs are small integers). Exit 0 on success.
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

int rank = 0, nranks = 1;
bool nonBlocking = false;
int failures = 0;

void failed(const char* what, const std::string& detail) {
  std::fprintf(stderr, "rank %d: %s: %s\n", rank, what, detail.c_str());
  ++failures;
}

// A call's result; in non-blocking mode ncclInProgress is polled to completion, as PyTorch does.
bool ok(const char* what, ncclResult_t result, ncclComm_t comm) {
  const Clock::time_point start = Clock::now();
  while (result == ncclInProgress && comm && Clock::now() - start < std::chrono::seconds(60)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (ncclCommGetAsyncError(comm, &result) != ncclSuccess) break;
  }
  if (result != ncclSuccess) failed(what, std::string(ncclGetErrorString(result)) + ": " + ncclGetLastError(comm));
  return result == ncclSuccess;
}

// ProcessGroupNCCL's watchdog: polls every communicator it knows of every 10 ms; with a
// deadline armed, aborts them all (in a group) once the deadline passes.
class Watchdog {
 public:
  Watchdog() : thread_([this] { run(); }) {}
  ~Watchdog() {
    stop_ = true;
    thread_.join();
  }
  void watch(ncclComm_t comm) {
    std::lock_guard<std::mutex> lock(mutex_);
    comms_.push_back(comm);
  }
  void forget(ncclComm_t comm) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = comms_.begin(); it != comms_.end(); ++it)
      if (*it == comm) {
        comms_.erase(it);
        break;
      }
  }
  void abortAfter(std::chrono::milliseconds delay) {
    std::lock_guard<std::mutex> lock(mutex_);
    abortAt_ = Clock::now() + delay;
    armed_ = true;
  }
  bool aborted() const { return aborted_; }
  Clock::time_point abortedAt() const { return abortedAt_; }  // when the abort began
  int asyncErrorsSeen() const { return errorsSeen_; }

 private:
  void run() {
    while (!stop_) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        for (ncclComm_t comm : comms_) {
          ncclResult_t state = ncclSuccess;
          if (ncclCommGetAsyncError(comm, &state) != ncclSuccess) ++errorsSeen_;
        }
        if (armed_ && Clock::now() >= abortAt_) {
          abortedAt_ = Clock::now();
          ncclGroupStart();
          for (ncclComm_t comm : comms_) ncclCommAbort(comm);
          ncclGroupEnd();
          comms_.clear();
          armed_ = false;
          aborted_ = true;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  std::mutex mutex_;
  std::vector<ncclComm_t> comms_;
  bool armed_ = false;
  Clock::time_point abortAt_;
  std::atomic<bool> aborted_{false};
  Clock::time_point abortedAt_;
  std::atomic<bool> stop_{false};
  std::atomic<int> errorsSeen_{0};
  std::thread thread_;
};

uint16_t toBf16(float value) {  // exact for the small integers used here
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return static_cast<uint16_t>(bits >> 16);
}
float fromBf16(uint16_t value) {
  uint32_t bits = static_cast<uint32_t>(value) << 16;
  float out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

ncclComm_t initWorld(const ncclUniqueId& id) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = nonBlocking ? 0 : 1;
  config.commName = "world";
  ncclComm_t comm = nullptr;
  ncclResult_t result = ncclCommInitRankConfig(&comm, nranks, id, rank, &config);
  if (nonBlocking && result != ncclInProgress && result != ncclSuccess) failed("non-blocking init", "not in progress");
  return ok("ncclCommInitRankConfig", result, comm) ? comm : nullptr;
}

// DDP: the shapes of every rank's parameters, then rank 0's parameters everywhere.
void ddpStart(ncclComm_t world) {
  int64_t shape[2] = {rank + 1, 3};
  std::vector<int64_t> shapes(2 * nranks, -1);
  if (ok("all-gather of shapes", ncclAllGather(shape, shapes.data(), 2, ncclInt64, world, nullptr), world))
    for (int r = 0; r < nranks; ++r)
      if (shapes[2 * r] != r + 1 || shapes[2 * r + 1] != 3) failed("all-gather of shapes", "wrong shape");
  std::vector<float> parameters(1000);
  for (size_t i = 0; i < parameters.size(); ++i) parameters[i] = static_cast<float>(rank * 1000 + i % 97);
  if (ok("broadcast of parameters",
         ncclBroadcast(parameters.data(), parameters.data(), parameters.size(), ncclFloat32, 0, world, nullptr), world))
    for (size_t i = 0; i < parameters.size(); ++i)
      if (parameters[i] != static_cast<float>(i % 97)) return failed("broadcast of parameters", "wrong value");
}

// DDP's gradient buckets with a divide factor: PREMUL_SUM, the operator destroyed right after.
void ddpBuckets(ncclComm_t world) {
  float deviceScalar = 3.0f;  // device residence: read when the collective runs (host memory here)
  for (int bucket = 0; bucket < 4; ++bucket) {
    std::vector<float> gradients(4096 + bucket * 1000);
    for (size_t i = 0; i < gradients.size(); ++i) gradients[i] = static_cast<float>((rank + 1) * (i % 5));
    const bool device = bucket % 2 == 1;
    float hostScalar = 2.0f;
    ncclRedOp_t op;
    if (!ok("ncclRedOpCreatePreMulSum",
            ncclRedOpCreatePreMulSum(&op, device ? &deviceScalar : &hostScalar, ncclFloat32,
                                     device ? ncclScalarDevice : ncclScalarHostImmediate, world),
            world))
      return;
    hostScalar = 100.0f;  // host-immediate: the value at creation counts
    bool sent =
        ok("PREMUL_SUM all-reduce",
           ncclAllReduce(gradients.data(), gradients.data(), gradients.size(), ncclFloat32, op, world, nullptr), world);
    ok("ncclRedOpDestroy", ncclRedOpDestroy(op, world), world);
    if (!sent) return;
    const float scalar = device ? 3.0f : 2.0f;
    const float rankSum = static_cast<float>(nranks * (nranks + 1) / 2);
    for (size_t i = 0; i < gradients.size(); ++i)
      if (gradients[i] != scalar * rankSum * static_cast<float>(i % 5))
        return failed("PREMUL_SUM all-reduce", "bucket " + std::to_string(bucket) + " element " + std::to_string(i));
  }
}

// FSDP: bf16 all-gather of parameter shards, reduce-scatter of gradients with ncclAvg.
void fsdp(ncclComm_t world) {
  const size_t shard = 1024;
  std::vector<uint16_t> mine(shard), full(shard * nranks);
  for (size_t i = 0; i < shard; ++i) mine[i] = toBf16(static_cast<float>(rank * 8 + i % 8));
  if (ok("bf16 all-gather", ncclAllGather(mine.data(), full.data(), shard, ncclBfloat16, world, nullptr), world))
    for (size_t i = 0; i < full.size(); ++i)
      if (fromBf16(full[i]) != static_cast<float>((i / shard) * 8 + i % 8)) return failed("bf16 all-gather", "wrong");
  // Rank r contributes c(i) + 2r - (n - 1): the terms in r cancel, so the average is c(i) exactly.
  std::vector<uint16_t> gradients(shard * nranks), out(shard);
  for (size_t i = 0; i < gradients.size(); ++i)
    gradients[i] = toBf16(static_cast<float>(static_cast<int>(i % 11) + 2 * rank - (nranks - 1)));
  if (ok("bf16 reduce-scatter avg",
         ncclReduceScatter(gradients.data(), out.data(), shard, ncclBfloat16, ncclAvg, world, nullptr), world))
    for (size_t i = 0; i < shard; ++i)
      if (fromBf16(out[i]) != static_cast<float>((rank * shard + i) % 11))
        return failed("bf16 reduce-scatter avg", "element " + std::to_string(i));
}

// FSDP's coalesced reduce-scatters with a divide factor: one operator per call, in one group.
void coalescedReduceScatters(ncclComm_t world) {
  const size_t count = 512;
  const int calls = 3;
  std::vector<std::vector<float>> in(calls, std::vector<float>(count * nranks)), out(calls, std::vector<float>(count));
  std::vector<float> scalars = {0.5f, 2.0f, 4.0f};
  for (int k = 0; k < calls; ++k)
    for (size_t i = 0; i < in[k].size(); ++i) in[k][i] = static_cast<float>((rank + 1) * (k + 1) + i % 3);
  ok("ncclGroupStart", ncclGroupStart(), world);
  for (int k = 0; k < calls; ++k) {
    ncclRedOp_t op;
    ok("ncclRedOpCreatePreMulSum",
       ncclRedOpCreatePreMulSum(&op, &scalars[k], ncclFloat32, ncclScalarHostImmediate, world), world);
    ok("coalesced reduce-scatter",
       ncclReduceScatter(in[k].data(), out[k].data(), count, ncclFloat32, op, world, nullptr), world);
    ok("ncclRedOpDestroy", ncclRedOpDestroy(op, world), world);
  }
  if (!ok("ncclGroupEnd (coalesced reduce-scatters)", ncclGroupEnd(), world)) return;
  for (int k = 0; k < calls; ++k)
    for (size_t i = 0; i < count; ++i) {
      float expected = 0;
      for (int r = 0; r < nranks; ++r)
        expected += scalars[k] * static_cast<float>((r + 1) * (k + 1) + (rank * count + i) % 3);
      if (out[k][i] != expected) return failed("coalesced reduce-scatter", "call " + std::to_string(k));
    }
}

// all_to_all_single with uneven splits: rank s sends (s + d) % 3 elements to rank d, zero
// counts and itself included, as one group of sends and receives.
void allToAllSingle(ncclComm_t world) {
  auto countOf = [](int from, int to) { return static_cast<size_t>((from + to) % 3); };
  std::vector<size_t> sendOffset(nranks + 1, 0), recvOffset(nranks + 1, 0);
  for (int p = 0; p < nranks; ++p) {
    sendOffset[p + 1] = sendOffset[p] + countOf(rank, p);
    recvOffset[p + 1] = recvOffset[p] + countOf(p, rank);
  }
  std::vector<int32_t> send(sendOffset[nranks] + 1), recv(recvOffset[nranks] + 1, -1);
  for (int p = 0; p < nranks; ++p)
    for (size_t j = 0; j < countOf(rank, p); ++j) send[sendOffset[p] + j] = rank * 1000 + p * 10 + static_cast<int>(j);
  ok("ncclGroupStart", ncclGroupStart(), world);
  for (int p = 0; p < nranks; ++p) {
    ok("ncclSend", ncclSend(send.data() + sendOffset[p], countOf(rank, p), ncclInt32, p, world, nullptr), world);
    ok("ncclRecv", ncclRecv(recv.data() + recvOffset[p], countOf(p, rank), ncclInt32, p, world, nullptr), world);
  }
  if (!ok("ncclGroupEnd (all_to_all_single)", ncclGroupEnd(), world)) return;
  for (int p = 0; p < nranks; ++p)
    for (size_t j = 0; j < countOf(p, rank); ++j)
      if (recv[recvOffset[p] + j] != p * 1000 + rank * 10 + static_cast<int>(j))
        return failed("all_to_all_single", "from rank " + std::to_string(p));
}

// batch_isend_irecv: each P2POp in a group of its own, all inside an outer group.
void batchIsendIrecv(ncclComm_t world) {
  const int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
  const size_t count = 300;
  std::vector<double> toNext(count, rank + 0.5), toPrev(count, rank + 0.25), fromPrev(count), fromNext(count);
  ok("ncclGroupStart", ncclGroupStart(), world);
  ncclGroupStart();
  ok("ncclSend", ncclSend(toNext.data(), count, ncclFloat64, next, world, nullptr), world);
  ncclGroupEnd();
  ncclGroupStart();
  ok("ncclRecv", ncclRecv(fromPrev.data(), count, ncclFloat64, prev, world, nullptr), world);
  ncclGroupEnd();
  ncclGroupStart();
  ok("ncclSend", ncclSend(toPrev.data(), count, ncclFloat64, prev, world, nullptr), world);
  ok("ncclRecv", ncclRecv(fromNext.data(), count, ncclFloat64, next, world, nullptr), world);
  ncclGroupEnd();
  if (!ok("ncclGroupEnd (batch_isend_irecv)", ncclGroupEnd(), world)) return;
  if (fromPrev[count - 1] != prev + 0.5 || fromNext[0] != next + 0.25) failed("batch_isend_irecv", "wrong data");
}

bool barrier(ncclComm_t comm) {
  float one = 1.0f;
  return ok("barrier", ncclAllReduce(&one, &one, 1, ncclFloat32, ncclSum, comm, nullptr), comm) &&
         one == static_cast<float>(nranks);
}

}  // namespace

int main(int argc, char** argv) {
  bool fault = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--nonblocking")) nonBlocking = true;
    if (!std::strcmp(argv[i], "--fault")) fault = true;
  }
  const char* rankText = std::getenv("RANK");
  const char* sizeText = std::getenv("WORLD_SIZE");
  const char* host = std::getenv("MASTER_ADDR");
  const char* port = std::getenv("MASTER_PORT");
  if (!rankText || !sizeText || !host || !port) {
    std::fprintf(stderr, "run me under weftrun\n");
    return 2;
  }
  rank = std::atoi(rankText);
  nranks = std::atoi(sizeText);
  setenv("NCCL_COMM_ID", (std::string(host) + ":" + port).c_str(), 1);

  int version = 0;
  if (!ok("ncclGetVersion", ncclGetVersion(&version), nullptr) || version != NCCL_VERSION_CODE) return 3;
  ncclUniqueId id;
  if (!ok("ncclGetUniqueId", ncclGetUniqueId(&id), nullptr)) return 4;
  Watchdog watchdog;
  ncclComm_t world = initWorld(id);
  if (!world) return 5;
  watchdog.watch(world);

  // new_group: members split with a color, the others with NOCOLOR.
  const bool member = rank % 2 == 0;
  ncclComm_t group = nullptr;
  ncclConfig_t groupConfig = NCCL_CONFIG_INITIALIZER;
  groupConfig.blocking = nonBlocking ? 0 : 1;
  if (!ok("ncclCommSplit", ncclCommSplit(world, member ? 0 : NCCL_SPLIT_NOCOLOR, rank, &group, &groupConfig), world))
    return 6;
  if (member != (group != nullptr)) failed("new_group", "membership");
  if (group) {
    // A split communicator may still be initializing in non-blocking mode: poll it too.
    ok("split init", ncclInProgress, group);
    watchdog.watch(group);
    int value = rank, members = (nranks + 1) / 2;
    if (ok("new_group all-reduce", ncclAllReduce(&value, &value, 1, ncclInt32, ncclSum, group, nullptr), group) &&
        value != members * (members - 1))  // the sum of the even ranks 0, 2, ..., 2(members-1)
      failed("new_group all-reduce", "sum " + std::to_string(value));
  }

  ddpStart(world);
  ddpBuckets(world);
  fsdp(world);
  coalescedReduceScatters(world);
  allToAllSingle(world);
  batchIsendIrecv(world);
  if (!barrier(world)) failed("barrier", "wrong count");

  if (fault) {
    if (rank == nranks - 1) {
      // Skips the all-reduce; stays until the others have given up, then leaves.
      std::this_thread::sleep_for(std::chrono::milliseconds(2000));
      watchdog.forget(world);
      if (group) watchdog.forget(group);
      ncclCommAbort(world);
      if (group) ncclCommAbort(group);
      return failures == 0 ? 0 : 1;
    }
    watchdog.abortAfter(std::chrono::milliseconds(500));
    std::vector<float> x(1 << 20, 1.0f);
    ncclResult_t result = ncclAllReduce(x.data(), x.data(), x.size(), ncclFloat32, ncclSum, world, nullptr);
    const Clock::time_point returned = Clock::now();
    // The call may return ncclInProgress in non-blocking mode; it must not be polled any more.
    for (int i = 0; i < 300 && !watchdog.aborted(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!watchdog.aborted()) failed("fault", "the watchdog never aborted");
    if (result == ncclSuccess) failed("fault", "the all-reduce the last rank skipped succeeded");
    const double late = std::chrono::duration<double>(returned - watchdog.abortedAt()).count();
    if (late > 1.0) failed("fault", "the blocked all-reduce returned " + std::to_string(late) + " s after the abort");
    std::printf("rank %d: the blocked all-reduce returned %.2f ms after the abort began (%s)\n", rank, late * 1e3,
                ncclGetErrorString(result));
    return failures == 0 ? 0 : 1;
  }

  // Clean shutdown, as ProcessGroupNCCL's destructor: finalize, poll, destroy.
  for (ncclComm_t comm : {group, world}) {
    if (!comm) continue;
    watchdog.forget(comm);
    ok("ncclCommFinalize", ncclCommFinalize(comm), comm);
    ok("ncclCommDestroy", ncclCommDestroy(comm), nullptr);
  }
  if (watchdog.asyncErrorsSeen() != 0) failed("watchdog", "ncclCommGetAsyncError failed");
  if (failures == 0) std::printf("rank %d: ProcessGroupNCCL pattern OK\n", rank);
  return failures == 0 ? 0 : 1;
}
