// Entry points of the NCCL 2.28 host API that this version of weft does not implement yet.
// They exist so that every program built against nccl.h loads, and they fail loudly with
// ncclInvalidUsage and a message naming the function, never silently.
#include "common/status.h"
#include "nccl.h"
#include "runtime/api_export.h"

using namespace weft;

#define WEFT_NOT_YET(name, ...)                                                                           \
  WEFT_API ncclResult_t name(__VA_ARGS__) {                                                               \
    return fail(ncclInvalidUsage, #name " is not implemented in this version of weft (see README.md)"); \
  }                                                                                                       \
  WEFT_PROFILING_ALIAS(ncclResult_t, name, __VA_ARGS__)

WEFT_NOT_YET(ncclCommRevoke, ncclComm_t comm, int revokeFlags);
WEFT_NOT_YET(ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config);
WEFT_NOT_YET(ncclCommShrink, ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
             ncclConfig_t* config, int shrinkFlags);
WEFT_NOT_YET(ncclCommInitRankScalable, ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds,
             ncclConfig_t* config);
WEFT_NOT_YET(ncclCommRegister, const ncclComm_t comm, void* buff, size_t size, void** handle);
WEFT_NOT_YET(ncclCommDeregister, const ncclComm_t comm, void* handle);
WEFT_NOT_YET(ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags);
WEFT_NOT_YET(ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win);
WEFT_NOT_YET(ncclGroupSimulateEnd, ncclSimInfo_t* simInfo);
