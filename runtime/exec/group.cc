#include "runtime/exec/group.h"

#include <thread>
#include <vector>

#include "common/status.h"
#include "runtime/api/api_call.h"
#include "runtime/device/stream_dispatch.h"
#include "runtime/exec/group_simulation.h"

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
      results[i] = apiCall("ncclGroupEnd", [&] { return inits[i](); });  // a thread's exception would abort
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

// Closes one level of grouping. At the outermost level it runs the queued initializations
// (communicators cannot be simulated into existence) and hands back the queued collectives;
// *outermost says whether this was that level.
ncclResult_t closeGroupLevel(const char* function, bool* outermost, std::vector<CollectiveCall>* calls) {
  *outermost = false;
  if (group.depth == 0) return fail(ncclInvalidUsage, "%s called without a matching ncclGroupStart", function);
  if (--group.depth > 0) return ncclSuccess;
  *outermost = true;
  std::vector<std::function<ncclResult_t()>> inits;
  inits.swap(group.inits);
  calls->swap(group.calls);
  if (!inits.empty()) WEFT_CHECK(runInits(inits));
  return ncclSuccess;
}

ncclResult_t groupEnd() {
  bool outermost = false;
  std::vector<CollectiveCall> calls;
  WEFT_CHECK(closeGroupLevel("ncclGroupEnd", &outermost, &calls));
  if (!outermost || calls.empty()) return ncclSuccess;
  return dispatchCollectives(calls);
}

ncclResult_t groupSimulateEnd(ncclSimInfo_t* simInfo) {
  if (!simInfo) return fail(ncclInvalidArgument, "ncclGroupSimulateEnd: simInfo is NULL");
  if (simInfo->magic != 0x74685283 || simInfo->size < sizeof(ncclSimInfo_t))
    return fail(ncclInvalidArgument,
                "ncclGroupSimulateEnd: simInfo was not initialized with NCCL_SIM_INFO_INITIALIZER");
  bool outermost = false;
  std::vector<CollectiveCall> calls;
  WEFT_CHECK(closeGroupLevel("ncclGroupSimulateEnd", &outermost, &calls));
  if (outermost) simInfo->estimatedTime = static_cast<float>(predictGroupMicroseconds(calls));
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
  return dispatchCollectives(single);
}

}  // namespace weft
