// Argument checks shared by the collective entry points. Each failure names the argument in
// the ncclGetLastError text.
#pragma once

#include <cstddef>

#include "nccl.h"

namespace weft {

ncclResult_t checkDataType(ncclDataType_t datatype, const char* function);
// `count` elements of `datatype` must fit in size_t bytes (times `multiplier`, e.g. nranks).
ncclResult_t checkCount(size_t count, ncclDataType_t datatype, size_t multiplier, const char* argument,
                        const char* function);
ncclResult_t checkBuffer(const void* buffer, size_t count, const char* argument, const char* function);

}  // namespace weft
