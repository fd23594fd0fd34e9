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

WEFT_NOT_YET(ncclGroupSimulateEnd, ncclSimInfo_t* simInfo);
