#include "runtime/api/argument_checks.h"

#include <cstdint>

#include "common/dtype.h"
#include "common/status.h"

namespace weft {

ncclResult_t checkDataType(ncclDataType_t datatype, const char* function) {
  if (!isValidDataType(static_cast<int>(datatype)))
    return fail(ncclInvalidArgument, "%s: datatype=%d is not a valid ncclDataType_t (0..%d)", function,
                static_cast<int>(datatype), ncclNumTypes - 1);
  return ncclSuccess;
}

ncclResult_t checkCount(size_t count, ncclDataType_t datatype, size_t multiplier, const char* argument,
                        const char* function) {
  size_t elementSize = dataTypeSize(datatype);
  if (multiplier == 0) multiplier = 1;
  if (count > SIZE_MAX / elementSize / multiplier || count > static_cast<size_t>(INT64_MAX) / elementSize / multiplier)
    return fail(ncclInvalidArgument, "%s: %s=%zu overflows the addressable size for %s", function, argument, count,
                dataTypeName(datatype));
  return ncclSuccess;
}

ncclResult_t checkBuffer(const void* buffer, size_t count, const char* argument, const char* function) {
  if (count > 0 && !buffer)
    return fail(ncclInvalidArgument, "%s: %s is NULL with a non-zero count", function, argument);
  return ncclSuccess;
}

}  // namespace weft
