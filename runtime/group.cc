#include "runtime/group.h"

#include <thread>
#include <vector>

#include "common/status.h"
#include "runtime/group_simulation.h"

namespace weft {

namespace {

struct GroupState {
  int depth = 0;
  std::vector<CollectiveCall> calls;
  std::vector<std::function<ncclResult_t()>> inits;
};

thread_local GroupState group;

// Initializations of several ranks must run concurrently: each waits for the others.
ncclResult_t runInits(std::vector<std::function<ncclResult_t()>>& inits) {
  if (inits.size() == 1) return inits.front()();
  std::vector<ncclResult_t> results(inits.size(), ncclSuccess);
  std::vector<std::string> messages(inits.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < inits.size(); ++i)
    threads.emplace_back([&, i] {
      results[i] = inits[i]();
      messages[i] = lastErrorMessage();
    });
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < inits.size(); ++i)
    if (results[i] != ncclSuccess) return fail(results[i], "%s", messages[i].c_str());
  return ncclSuccess;
}

}  // namespace

bool groupActive() { return group.depth > 0; }

ncclResult_t groupStart() {
  ++group.depth;
  return ncclSuccess;
}

ncclResult_t groupEnd() {
  if (group.depth == 0) return fail(ncclInvalidUsage, "ncclGroupEnd called without a matching ncclGroupStart");
  if (--group.depth > 0) return ncclSuccess;
  std::vector<std::function<ncclResult_t()>> inits;
  std::vector<CollectiveCall> calls;
  inits.swap(group.inits);
  calls.swap(group.calls);
  if (!inits.empty()) WEFT_CHECK(runInits(inits));
  if (calls.empty()) return ncclSuccess;
  return runCollectives(calls);
}

ncclResult_t groupSimulateEnd(ncclSimInfo_t* simInfo) {
  if (!simInfo) return fail(ncclInvalidArgument, "ncclGroupSimulateEnd: simInfo is NULL");
  if (simInfo->magic != 0x74685283 || simInfo->size < sizeof(ncclSimInfo_t))
    return fail(ncclInvalidArgument, "ncclGroupSimulateEnd: simInfo was not initialized with NCCL_SIM_INFO_INITIALIZER");
  if (group.depth == 0) return fail(ncclInvalidUsage, "ncclGroupSimulateEnd called without a matching ncclGroupStart");
  if (--group.depth > 0) return ncclSuccess;
  std::vector<std::function<ncclResult_t()>> inits;
  std::vector<CollectiveCall> calls;
  inits.swap(group.inits);
  calls.swap(group.calls);
  // Communicators cannot be simulated into existence: queued initializations do run.
  if (!inits.empty()) WEFT_CHECK(runInits(inits));
  simInfo->estimatedTime = static_cast<float>(predictGroupMicroseconds(calls));
  return ncclSuccess;
}

void groupEnqueueCollective(const CollectiveCall& call) { group.calls.push_back(call); }

void groupEnqueueInit(std::function<ncclResult_t()> init) { group.inits.push_back(std::move(init)); }

ncclResult_t submitCollective(const CollectiveCall& call) {
  if (groupActive()) {
    groupEnqueueCollective(call);
    return ncclSuccess;
  }
  // A lone call is a group of one; the vector's storage is reused by this thread.
  thread_local std::vector<CollectiveCall> single;
  single.assign(1, call);
  return runCollectives(single);
}

}  // namespace weft
