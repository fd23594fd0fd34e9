// Communicators made from others: ncclCommSplit (by color and key), ncclCommShrink (without
// some ranks, which may be dead), ncclCommRevoke, and ncclCommInitRankScalable. The new
// communicator's unique id is made by its lowest member and handed to the others over the
// parent communicator, then each member initializes as with ncclCommInitRankConfig.
#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "common/deadline.h"
#include "common/settings.h"
#include "common/status.h"
#include "nccl.h"
#include "runtime/api/api_call.h"
#include "runtime/api/export.h"
#include "runtime/comm/communicator.h"
#include "runtime/comm/shrink_rendezvous.h"
#include "runtime/comm/unique_id.h"
#include "runtime/device/stream_dispatch.h"
#include "runtime/exec/collective.h"

using namespace weft;

namespace {

// A collective on the parent that runs now, even inside the caller's group: after the device
// calls made before it, as any host-memory call (its progress thread must be done with the
// parent's connections and direct-path state).
ncclResult_t parentAllGather(ncclComm* parent, const void* send, void* recv, size_t bytes) {
  WEFT_CHECK(waitForStreamWork(parent));
  return runCollectives({makeCall(Collective::AllGather, parent, send, recv, bytes, ncclUint8)});
}

// The parent must be a live communicator; a failed one is fine (shrinking away a dead rank is
// how one recovers from it), an aborted one is not.
ncclResult_t checkParent(ncclComm* parent, const char* function) {
  if (!parent || parent->magic != kCommMagic)
    return fail(ncclInvalidArgument, "%s: comm is not a live communicator", function);
  finishNonBlockingInit(parent);
  if (parent->state.aborted.load()) return fail(ncclInvalidUsage, "%s: comm was aborted", function);
  return ncclSuccess;
}

const ncclConfig_t* inheritedConfig(ncclComm* parent, ncclConfig_t* config) {
  return config ? config : &parent->config;
}

}  // namespace

WEFT_API ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  return apiCall("ncclCommSplit", [&]() -> ncclResult_t {
    constexpr const char* kName = "ncclCommSplit";
    WEFT_CHECK(checkCommunicator(comm));
    if (!newcomm) return fail(ncclInvalidArgument, "%s: newcomm is NULL", kName);
    if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
      return fail(ncclInvalidArgument, "%s: color=%d must be >= 0 or NCCL_SPLIT_NOCOLOR", kName, color);
    *newcomm = nullptr;
    struct Entry {
      int32_t color;
      int32_t key;
    };
    Entry mine{color, key};
    std::vector<Entry> all(comm->nranks);
    WEFT_CHECK(parentAllGather(comm, &mine, all.data(), sizeof(Entry)));
    // Members of my color ordered by (key, parent rank).
    std::vector<int> members;
    for (int r = 0; r < comm->nranks; ++r)
      if (color != NCCL_SPLIT_NOCOLOR && all[r].color == color) members.push_back(r);
    std::stable_sort(members.begin(), members.end(), [&](int a, int b) { return all[a].key < all[b].key; });
    bool leader = !members.empty() && members.front() == comm->rank;
    ncclUniqueId myId{};
    if (leader) WEFT_CHECK(ncclGetUniqueId(&myId));
    std::vector<ncclUniqueId> ids(comm->nranks);
    WEFT_CHECK(parentAllGather(comm, &myId, ids.data(), sizeof(ncclUniqueId)));
    if (color == NCCL_SPLIT_NOCOLOR) return ncclSuccess;
    int newRank = static_cast<int>(std::find(members.begin(), members.end(), comm->rank) - members.begin());
    return initRank(newcomm, static_cast<int>(members.size()), ids[members.front()], newRank,
                    inheritedConfig(comm, config), comm->cudaDevice);  // on the parent's device
  });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                     ncclConfig_t* config);

WEFT_API ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
                                     ncclConfig_t* config, int shrinkFlags) {
  return apiCall("ncclCommShrink", [&]() -> ncclResult_t {
    constexpr const char* kName = "ncclCommShrink";
    WEFT_CHECK(checkParent(comm, kName));
    if (!newcomm) return fail(ncclInvalidArgument, "%s: newcomm is NULL", kName);
    if (excludeRanksCount < 0 || (excludeRanksCount > 0 && !excludeRanksList))
      return fail(ncclInvalidArgument, "%s: excludeRanksList is NULL with excludeRanksCount=%d", kName,
                  excludeRanksCount);
    if (shrinkFlags != NCCL_SHRINK_DEFAULT && shrinkFlags != NCCL_SHRINK_ABORT)
      return fail(ncclInvalidArgument, "%s: shrinkFlags=%d (NCCL_SHRINK_DEFAULT or NCCL_SHRINK_ABORT)", kName,
                  shrinkFlags);
    std::vector<bool> excluded(comm->nranks, false);
    for (int i = 0; i < excludeRanksCount; ++i) {
      int r = excludeRanksList[i];
      if (r < 0 || r >= comm->nranks)
        return fail(ncclInvalidArgument, "%s: excludeRanksList[%d]=%d is not a rank of comm", kName, i, r);
      excluded[r] = true;
    }
    if (excluded[comm->rank])
      return fail(ncclInvalidArgument, "%s: this rank (%d) is in excludeRanksList; excluded ranks must not call it",
                  kName, comm->rank);
    *newcomm = nullptr;
    if (shrinkFlags == NCCL_SHRINK_ABORT) {
      // Stop whatever the parent is doing on other threads before reusing its connections.
      comm->state.revoked.store(true);
      for (int i = 0; i < 2000 && comm->state.activeCalls.load() > 0; ++i)
        std::this_thread::sleep_for(std::chrono::microseconds(500));
      comm->state.revoked.store(false);
    }
    std::vector<int> survivors;
    for (int r = 0; r < comm->nranks; ++r)
      if (!excluded[r]) survivors.push_back(r);
    // The lowest survivor makes the id and sends it to the others, past whatever a failed or
    // revoked call left in the connections (shrink_rendezvous.h); excluded (perhaps dead) ranks
    // take no part.
    ncclUniqueId id{};
    const uint64_t sequence = comm->state.shrinks++;
    const Deadline deadline = Deadline::after(settingDouble(Setting::WeftTimeout));
    if (survivors.front() == comm->rank) {
      WEFT_CHECK(ncclGetUniqueId(&id));
      for (int r : survivors)
        if (r != comm->rank) WEFT_CHECK(sendShrinkId(comm, r, sequence, id, deadline));
    } else {
      WEFT_CHECK(receiveShrinkId(comm, survivors.front(), sequence, &id, deadline));
    }
    int newRank = static_cast<int>(std::find(survivors.begin(), survivors.end(), comm->rank) - survivors.begin());
    return initRank(newcomm, static_cast<int>(survivors.size()), id, newRank, inheritedConfig(comm, config),
                    comm->cudaDevice);  // on the parent's device
  });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclCommShrink, ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                     ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags);

WEFT_API ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  return apiCall("ncclCommRevoke", [&]() -> ncclResult_t {
    WEFT_CHECK(checkParent(comm, "ncclCommRevoke"));
    if (revokeFlags != NCCL_REVOKE_DEFAULT)
      return fail(ncclInvalidArgument, "ncclCommRevoke: revokeFlags=%d must be NCCL_REVOKE_DEFAULT (0)", revokeFlags);
    comm->state.revoked.store(true);
    // Operations in flight on other threads fail at their next progress check; wait for them
    // briefly so that the communicator is quiescent when this returns.
    for (int i = 0; i < 2000 && comm->state.activeCalls.load() > 0; ++i)
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    return ncclSuccess;
  });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int revokeFlags);

WEFT_API ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                               ncclUniqueId* commIds, ncclConfig_t* config) {
  return apiCall("ncclCommInitRankScalable", [&]() -> ncclResult_t {
    constexpr const char* kName = "ncclCommInitRankScalable";
    if (nId < 1) return fail(ncclInvalidArgument, "%s: nId=%d must be at least 1", kName, nId);
    if (!commIds) return fail(ncclInvalidArgument, "%s: commIds is NULL", kName);
    for (int i = 0; i < nId; ++i) {
      UniqueIdContents contents;
      if (decodeUniqueId(commIds[i], &contents) != ncclSuccess)
        return fail(ncclInvalidArgument, "%s: commIds[%d] is not a unique id from ncclGetUniqueId", kName, i);
    }
    // One root admits every rank (a root serves thousands of ranks in a few milliseconds); the
    // other ids' roots are never contacted and retire at their WEFT_TIMEOUT.
    return ncclCommInitRankConfig(newcomm, nranks, commIds[0], myrank, config);
  });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclCommInitRankScalable, ncclComm_t* newcomm, int nranks, int myrank, int nId,
                     ncclUniqueId* commIds, ncclConfig_t* config);
