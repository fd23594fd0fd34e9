// ncclMemAlloc/ncclMemFree on host memory: shared segments that same-host peers can map.
#include "nccl.h"
#include "runtime/api/api_call.h"
#include "runtime/api/export.h"
#include "transport/shm/shared_memory_pool.h"

using namespace weft;

WEFT_API ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  return apiCall("ncclMemAlloc", [&]() -> ncclResult_t { return sharedAlloc(ptr, size); });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclMemAlloc, void** ptr, size_t size);

WEFT_API ncclResult_t ncclMemFree(void* ptr) {
  return apiCall("ncclMemFree", [&]() -> ncclResult_t { return sharedFree(ptr); });
}
WEFT_PROFILING_ALIAS(ncclResult_t, ncclMemFree, void* ptr);
