// Communicator creation, queries and teardown.
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "common/log.h"
#include "common/settings.h"
#include "common/status.h"
#include "nccl.h"
#include "runtime/api/api_call.h"
#include "runtime/api/export.h"
#include "runtime/comm/bootstrap.h"
#include "runtime/comm/communicator.h"
#include "runtime/comm/unique_id.h"
#include "runtime/device/device_api.h"
#include "runtime/device/stream_dispatch.h"
#include "runtime/exec/group.h"
#include "weft/weft.h"

using namespace weft;

namespace {

ncclResult_t makeUniqueId(ncclUniqueId* uniqueId) {
  UniqueIdContents contents;
  if (auto fixed = settingString(Setting::NcclCommId)) {
    // NCCL_COMM_ID=host:port: rank 0 hosts the root there; every rank can compute the id.
    WEFT_CHECK(parseSocketAddress(*fixed, "NCCL_COMM_ID", &contents.root));
    const char* secret = settingText(Setting::WeftSecret);
    if (!secret) WEFT_CHECK(allowPublicSecret("NCCL_COMM_ID"));
    contents.secret = secretFromText(secret ? secret : fixed->c_str());
    contents.rootAtRankZero = true;
  } else {
    SocketAddress address;
    WEFT_CHECK(findInterfaceAddress(&address, nullptr));
    address.setPort(0);
    WEFT_CHECK(randomSecret(&contents.secret));
    WEFT_CHECK(startBootstrapRoot(address, contents.secret, &contents.root));
  }
  encodeUniqueId(contents, uniqueId);
  return ncclSuccess;
}

ncclResult_t checkInitArguments(ncclComm_t* comm, int nranks, int rank) {
  if (!comm) return fail(ncclInvalidArgument, "comm is NULL (it must point to a ncclComm_t to fill in)");
  if (nranks < 1) return fail(ncclInvalidArgument, "nranks=%d: must be at least 1", nranks);
  if (rank < 0 || rank >= nranks) return fail(ncclInvalidArgument, "rank=%d: must be in [0, nranks=%d)", rank, nranks);
  return ncclSuccess;
}

}  // namespace

WEFT_API ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  return apiCall("ncclGetUniqueId", [&]() -> ncclResult_t {
    if (!uniqueId) return fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
    return makeUniqueId(uniqueId);
  });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclGetUniqueId, ncclUniqueId* uniqueId);

WEFT_API ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                             ncclConfig_t* config) {
  return apiCall("ncclCommInitRankConfig", [&]() -> ncclResult_t {
    WEFT_CHECK(checkInitArguments(comm, nranks, rank));
    UniqueIdContents contents;
    WEFT_CHECK(decodeUniqueId(commId, &contents));
    if (groupActive()) {
      // Inside a group the ranks of one process are initialized together at ncclGroupEnd.
      *comm = nullptr;
      std::shared_ptr<ncclConfig_t> copy;
      if (config) copy = std::make_shared<ncclConfig_t>(*config);
      // The device current now, not on the thread ncclGroupEnd runs the init on (NCCL's
      // one-process pattern sets each rank's device before its ncclCommInitRank).
      const int device = currentDeviceOrNone();
      groupEnqueueInit([=] { return weft::initRank(comm, nranks, commId, rank, copy.get(), device); });
      return ncclSuccess;
    }
    return weft::initRank(comm, nranks, commId, rank, config);
  });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                     ncclConfig_t* config);

WEFT_API ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return apiCall("ncclCommInitRank",
                 [&]() -> ncclResult_t { return ncclCommInitRankConfig(comm, nranks, commId, rank, nullptr); });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclCommInitRank, ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);

WEFT_API ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  return apiCall("ncclCommInitAll", [&]() -> ncclResult_t {
    if (!comms) return fail(ncclInvalidArgument, "ncclCommInitAll: comm is NULL");
    if (ndev < 1) return fail(ncclInvalidArgument, "ncclCommInitAll: ndev=%d must be at least 1", ndev);
    // Rank r is on devlist[r], else on device r as in NCCL; weft allows several ranks on one
    // device, so without a list the ranks wrap around the devices there are.
    DeviceApi* device = weft::deviceApi();
    const int devices = device ? device->deviceCount() : 0;
    if (devlist)
      for (int r = 0; r < ndev; ++r)
        if (devlist[r] < 0 || (device && devlist[r] >= devices))
          return fail(ncclInvalidArgument, "ncclCommInitAll: devlist[%d]=%d is not a device (this process sees %d)", r,
                      devlist[r], devices);
    ncclUniqueId id;  // after the checks: an id starts a rendezvous that waits for its ranks
    WEFT_CHECK(makeUniqueId(&id));
    // Every rank is a thread of this process; each init waits for the others, so they run at once.
    std::vector<ncclResult_t> results(ndev, ncclSuccess);
    std::vector<std::string> messages(ndev);
    std::vector<std::thread> threads;
    for (int r = 0; r < ndev; ++r)
      threads.emplace_back([&, r] {
        const int rankDevice = devlist ? devlist[r] : (devices > 0 ? r % devices : -1);
        results[r] =
            apiCall("ncclCommInitAll", [&] { return weft::initRank(&comms[r], ndev, id, r, nullptr, rankDevice); });
        messages[r] = lastErrorMessage();
      });
    for (auto& t : threads) t.join();
    for (int r = 0; r < ndev; ++r) {
      if (results[r] == ncclSuccess) continue;
      for (int other = 0; other < ndev; ++other) {
        if (results[other] == ncclSuccess) destroyCommunicator(comms[other]);
        comms[other] = nullptr;
      }
      return fail(results[r], "ncclCommInitAll: rank %d: %s", r, messages[r].c_str());
    }
    return ncclSuccess;
  });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclCommInitAll, ncclComm_t* comm, int ndev, const int* devlist);

WEFT_API ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  return apiCall("ncclCommFinalize", [&]() -> ncclResult_t {
    // Host-memory collectives have completed when their call returned; device-memory ones are
    // flushed here (their streams reach them, they run).
    WEFT_CHECK(checkCommunicator(comm));
    return waitForStreamWork(comm);
  });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclCommFinalize, ncclComm_t comm);

WEFT_API ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  return apiCall("ncclCommDestroy", [&]() -> ncclResult_t {
    if (!comm) return ncclSuccess;  // as NCCL: destroying NULL is a no-op
    if (comm->magic != kCommMagic) return fail(ncclInvalidArgument, "ncclCommDestroy: comm is not a live communicator");
    destroyCommunicator(comm);
    return ncclSuccess;
  });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclCommDestroy, ncclComm_t comm);

WEFT_API ncclResult_t ncclCommAbort(ncclComm_t comm) {
  return apiCall("ncclCommAbort", [&]() -> ncclResult_t {
    if (!comm) return ncclSuccess;
    if (comm->magic != kCommMagic) return fail(ncclInvalidArgument, "ncclCommAbort: comm is not a live communicator");
    if (abortCommunicator(comm)) destroyCommunicator(comm);
    return ncclSuccess;
  });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclCommAbort, ncclComm_t comm);

WEFT_API ncclResult_t weftCommSetTimeout(ncclComm_t comm, double seconds) {
  return apiCall("weftCommSetTimeout", [&]() -> ncclResult_t {
    WEFT_CHECK(checkCommunicator(comm));
    if (!(seconds > 0) || seconds > 2592000)
      return fail(ncclInvalidArgument, "weftCommSetTimeout: seconds=%g is not in (0, 2592000]", seconds);
    comm->state.timeoutSeconds.store(seconds, std::memory_order_relaxed);
    return ncclSuccess;
  });
}

WEFT_API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  return apiCall("ncclCommGetAsyncError", [&]() -> ncclResult_t {
    if (!comm || comm->magic != kCommMagic) return fail(ncclInvalidArgument, "ncclCommGetAsyncError: comm is invalid");
    if (!asyncError) return fail(ncclInvalidArgument, "ncclCommGetAsyncError: asyncError is NULL");
    *asyncError = static_cast<ncclResult_t>(comm->state.asyncError.load());
    if (*asyncError != ncclSuccess && *asyncError != ncclInProgress) {
      std::lock_guard<std::mutex> lock(comm->state.errorMutex);
      fail(*asyncError, "%s", comm->state.lastError.c_str());  // so that ncclGetLastError explains it
    }
    return ncclSuccess;
  });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* asyncError);

WEFT_API ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  return apiCall("ncclCommCount", [&]() -> ncclResult_t {
    if (!comm || comm->magic != kCommMagic) return fail(ncclInvalidArgument, "ncclCommCount: comm is invalid");
    if (!count) return fail(ncclInvalidArgument, "ncclCommCount: count is NULL");
    *count = comm->nranks;
    return ncclSuccess;
  });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count);

WEFT_API ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  return apiCall("ncclCommCuDevice", [&]() -> ncclResult_t {
    if (!comm || comm->magic != kCommMagic) return fail(ncclInvalidArgument, "ncclCommCuDevice: comm is invalid");
    if (!device) return fail(ncclInvalidArgument, "ncclCommCuDevice: device is NULL");
    *device = comm->cudaDevice;
    return ncclSuccess;
  });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int* device);

WEFT_API ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  return apiCall("ncclCommUserRank", [&]() -> ncclResult_t {
    if (!comm || comm->magic != kCommMagic) return fail(ncclInvalidArgument, "ncclCommUserRank: comm is invalid");
    if (!rank) return fail(ncclInvalidArgument, "ncclCommUserRank: rank is NULL");
    *rank = comm->rank;
    return ncclSuccess;
  });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int* rank);

WEFT_API ncclResult_t ncclGroupStart(void) {
  return apiCall("ncclGroupStart", [&]() -> ncclResult_t { return groupStart(); });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclGroupStart, void);

WEFT_API ncclResult_t ncclGroupEnd(void) {
  return apiCall("ncclGroupEnd", [&]() -> ncclResult_t { return groupEnd(); });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclGroupEnd, void);

WEFT_API ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  return apiCall("ncclGroupSimulateEnd", [&]() -> ncclResult_t { return groupSimulateEnd(simInfo); });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* simInfo);
