// NCCL 2.28's device-side API (nccl_device.h: device communicators, teams, LSA/GIN barriers,
// LL all-to-all) lets CUDA kernels communicate themselves. weft runs no device-initiated
// communication, so these exist only so that programs linked against them load; each fails
// with ncclInvalidUsage (or an invalid value, where the real function returns no
// ncclResult_t) and a message saying the device API is unsupported. Their parameters keep
// nccl.h's names as comments: every argument is refused unread.
#include "common/status.h"
#include "nccl.h"
#include "runtime/api/api_call.h"
#include "runtime/api/export.h"

using namespace weft;

namespace {

// ncclTeam's layout (three ints, returned in registers like the real one).
struct TeamValue {
  int nRanks;
  int rank;
  int stride;
};

ncclResult_t unsupported(const char* function) {
  return fail(ncclInvalidUsage, "%s: weft does not support NCCL's device API (nccl_device.h); use the host API",
              function);
}

}  // namespace

#define WEFT_DEVICE_RESULT(name, ...)                         \
  WEFT_API ncclResult_t name(__VA_ARGS__) {                   \
    return apiCall(#name, [] { return unsupported(#name); }); \
  }                                                           \
  WEFT_PROFILING_ALIAS(ncclResult_t, name, __VA_ARGS__)

WEFT_DEVICE_RESULT(ncclDevCommCreate, ncclComm_t /*comm*/, const void* /*requirements*/, void* /*outDevComm*/);
WEFT_DEVICE_RESULT(ncclDevCommDestroy, ncclComm_t /*comm*/, const void* /*devComm*/);
WEFT_DEVICE_RESULT(ncclGinBarrierCreateRequirement, ncclComm_t /*comm*/, TeamValue /*team*/, int /*nBarriers*/,
                   void* /*outHandle*/, void* /*outReq*/);
WEFT_DEVICE_RESULT(ncclLsaBarrierCreateRequirement, TeamValue /*team*/, int /*nBarriers*/, void* /*outHandle*/,
                   void* /*outReq*/);
WEFT_DEVICE_RESULT(ncclLLA2ACreateRequirement, int /*nBlocks*/, int /*nSlots*/, void* /*outHandle*/, void* /*outReq*/);

// The device functions that return a value: the message is recorded and an invalid value returned.
int unsupportedCount(const char* function) {
  return apiCallOr(function, -1, [&] {
    unsupported(function);
    return -1;
  });
}

WEFT_API int ncclLLA2ACalcSlots(int /*maxElts*/, int /*maxEltSize*/) { return unsupportedCount("ncclLLA2ACalcSlots"); }
WEFT_PROFILING_ALIAS(int, ncclLLA2ACalcSlots, int /*maxElts*/, int /*maxEltSize*/);

#define WEFT_DEVICE_TEAM(name)                       \
  WEFT_API TeamValue name(const void* /*devComm*/) { \
    constexpr TeamValue kInvalid{0, -1, 0};          \
    return apiCallOr(#name, kInvalid, [] {           \
      unsupported(#name);                            \
      return kInvalid;                               \
    });                                              \
  }                                                  \
  WEFT_PROFILING_ALIAS(TeamValue, name, const void* /*devComm*/)

WEFT_DEVICE_TEAM(ncclTeamWorld);
WEFT_DEVICE_TEAM(ncclTeamLsa);
WEFT_DEVICE_TEAM(ncclTeamRail);

WEFT_API int ncclTeamRankToWorld(const void* /*devComm*/, TeamValue /*team*/, int /*rank*/) {
  return unsupportedCount("ncclTeamRankToWorld");
}
WEFT_PROFILING_ALIAS(int, ncclTeamRankToWorld, const void* /*devComm*/, TeamValue /*team*/, int /*rank*/);

WEFT_API int ncclTeamRankToLsa(const void* /*devComm*/, TeamValue /*team*/, int /*rank*/) {
  return unsupportedCount("ncclTeamRankToLsa");
}
WEFT_PROFILING_ALIAS(int, ncclTeamRankToLsa, const void* /*devComm*/, TeamValue /*team*/, int /*rank*/);

// NVIDIA's library exports this internal helper of ncclResetDebugInit; programs do not call it,
// but symbol-for-symbol compatibility is cheap.
WEFT_API void ncclResetDebugInitInternal(void) { ncclResetDebugInit(); }
